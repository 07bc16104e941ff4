package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// memRanger is one file in memory as a source.Ranger, counting the bytes
// read from it.
type memRanger struct {
	data []byte
	read atomic.Int64
}

func (m *memRanger) Probe(_ context.Context, name string, n int) (int64, []byte, error) {
	if name != "model.bin" {
		return 0, nil, fs.ErrNotExist
	}
	n = min(n, len(m.data))
	m.read.Add(int64(n))
	return int64(len(m.data)), append([]byte(nil), m.data[:n]...), nil
}

func (m *memRanger) ReadRange(_ context.Context, _ string, off int64, p []byte) error {
	m.read.Add(int64(len(p)))
	copy(p, m.data[off:])
	return nil
}

// TestDigestWindow: with a window, the ranges the source reads for others
// (the browser's dealer, nearly in file order) are hashed as they pass,
// those that come early held until their turn; Finish reads again only
// what did not pass or did not fit. Without one, what came out of order
// is read again, as natively.
func TestDigestWindow(t *testing.T) {
	const mb = 1 << 20
	data := make([]byte, 20*mb+123)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	// The spans, each 1 MB, in pairs swapped (0 1 2 … → 1 0 3 2 …), with
	// span 8 missing (nobody read it) in one case.
	order := func(missing int) (out []int) {
		for i := 0; i < 20; i += 2 {
			for _, k := range []int{i + 1, i} {
				if k != missing {
					out = append(out, k)
				}
			}
		}
		return out
	}
	size := int64(len(data))
	for _, tc := range []struct {
		window, reread int64
		order          []int
	}{
		{4 * mb, 0, order(-1)},
		// Span 8, then 9 to 11 and 13 held (4 MB), 12 and the rest
		// dropped: span 8, span 12, and spans 14 to 19.
		{4 * mb, mb + mb + size - (64<<10 + 14*mb), order(8)},
		// Natively: all but what the audit read in order.
		{0, size - 1000, order(-1)},
	} {
		m := &memRanger{data: data}
		rfs := source.NewRangeFS(m)
		rfs.FirstChunk = 64 << 10
		d := newDigestFS(rfs, tc.window)
		f, err := d.Open("model.bin")
		if err != nil {
			t.Fatal(err)
		}
		// The audit reads the header in order: [0, 64 kB) from the probe.
		if _, err := f.(io.ReaderAt).ReadAt(make([]byte, 1000), 0); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, mb)
		for _, k := range tc.order {
			off := 64<<10 + int64(k)*mb
			if err := rfs.ReadRange(context.Background(), "model.bin", off, buf[:min(int64(mb), int64(len(data))-off)]); err != nil {
				t.Fatal(err)
			}
		}
		before := m.read.Load()
		files, s, err := d.Finish(context.Background())
		if err != nil || len(files) != 1 {
			t.Fatal(files, err)
		}
		if files[0].SHA256 != want {
			t.Errorf("window %d: digest %s, want %s", tc.window, files[0].SHA256, want)
		}
		if read := m.read.Load() - before; s.Reread != tc.reread || read < tc.reread || read > tc.reread+64<<10 {
			t.Errorf("window %d: reread %d (read %d), want %d", tc.window, s.Reread, read, tc.reread)
		}
	}
}

// TestDigestFromURL: natively, a deep audit from a URL takes the pairs in
// file order and hashes the ranges its workers read as they pass (a
// window), so that the digest reads nothing again — before, Finish
// downloaded the whole file a second time — and its SHA-256 is the file's.
func TestDigestFromURL(t *testing.T) {
	var served atomic.Int64
	files := http.FileServer(http.Dir(worldDir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if testing.Verbose() {
			t.Logf("%s %s", r.URL.Path, r.Header.Get("Range"))
		}
		files.ServeHTTP(countingWriter{w, &served}, r)
	}))
	defer srv.Close()
	model, err := os.ReadFile(filepath.Join(worldDir, "adapter", "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(model)
	for _, mode := range []report.Mode{report.ModeExact, report.ModeRandomized} {
		served.Store(0)
		out, _, err := run(t, jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{URL: srv.URL + "/adapter/"}, Mode: mode, Claims: "demo", Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		a := out.Audit
		if a == nil || a.Verdict != "pass" || a.Provenance == nil {
			t.Fatalf("%s: %+v", mode, a)
		}
		var got string
		for _, f := range a.Provenance.Files {
			if f.Name == "adapter_model.safetensors" {
				got = f.SHA256
			}
		}
		d := a.Provenance.Digests
		if got != hex.EncodeToString(want[:]) || !d.Computed || d.Bytes < int64(len(model)) {
			t.Errorf("%s: sha256 %q, want %x; digests %+v", mode, got, want, d)
		}
		if d.Reread != 0 {
			t.Errorf("%s: the digest read %d bytes again (of %d)", mode, d.Reread, len(model))
		}
		if s := served.Load(); s > int64(len(model))+1<<20 {
			t.Errorf("%s: %d bytes served for a %d-byte adapter", mode, s, len(model))
		}
	}
}

// countingWriter counts the body bytes a handler writes.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return c.ResponseWriter.Write(b)
}
