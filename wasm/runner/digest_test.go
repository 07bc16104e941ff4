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
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
// those that come early held until their turn. A range that does not fit
// is read again when its turn comes, and so is the gap the full window
// waits for — nothing after them is: a late or missing range costs its own
// bytes, not every range after it (before, Finish read all of those
// again). Without a window, what came out of order is read again by
// Finish, as natively.
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
	// In order but for span 3, six places late (a slow worker).
	slow := []int{0, 1, 2, 4, 5, 6, 7, 8, 9, 3}
	for i := 10; i < 20; i++ {
		slow = append(slow, i)
	}
	size := int64(len(data))
	for _, tc := range []struct {
		window, reread int64
		order          []int
	}{
		{4 * mb, 0, order(-1)},
		// 9 to 11 and 13 held (4 MB); 12 does not fit: span 8, the gap
		// the window waits for, is read, then 12 in its turn; the rest
		// passes.
		{4 * mb, 2 * mb, order(8)},
		// 4 and 5 held, 6 does not fit: 3 is read, then 6; 3 itself,
		// when it comes, is no longer needed.
		{2 * mb, 2 * mb, slow},
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
		before, asked := m.read.Load(), int64(0)
		for _, k := range tc.order {
			off := 64<<10 + int64(k)*mb
			if err := rfs.ReadRange(context.Background(), "model.bin", off, buf[:min(int64(mb), int64(len(data))-off)]); err != nil {
				t.Fatal(err)
			}
			asked += min(int64(mb), int64(len(data))-off)
		}
		files, s, err := d.Finish(context.Background())
		if err != nil || len(files) != 1 {
			t.Fatal(files, err)
		}
		if files[0].SHA256 != want {
			t.Errorf("window %d: digest %s, want %s", tc.window, files[0].SHA256, want)
		}
		if read := m.read.Load() - before - asked; s.Reread != tc.reread || read < tc.reread || read > tc.reread+64<<10 {
			t.Errorf("window %d: reread %d (read %d), want %d", tc.window, s.Reread, read, tc.reread)
		}
	}
}

// TestDigestWindowWorkers: many workers taking the file's ranges in order
// from one counter, each pausing at random (a many-core machine's, some
// slower than others), with a window smaller than what they hold between
// them. Through the check's own files (natively from a URL, with no
// window; and with one) an early range waits for its turn or for room,
// and a gap nobody reads (a hole in what the workers
// take) is read for the digest once it has been nobody's for gapWait: the
// digest is the file's, and nothing but the hole is read again — before,
// a range that did not fit made Finish read again everything after it. Through the source alone (the browser's
// dealer, whose reads cannot wait), ranges are dropped and read in their
// turn: the digest is still the file's. Run with -race.
func TestDigestWindowWorkers(t *testing.T) {
	const kb = 1 << 10
	const piece, hole = 32 * kb, 100 // piece 100 is nobody's
	data := make([]byte, 16<<20+5)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	sum := sha256.Sum256(data)
	size := int64(len(data))
	defer func(w time.Duration) { gapWait = w }(gapWait)
	gapWait = 200 * time.Millisecond // far above the workers' pauses
	for _, tc := range []struct {
		own    bool
		window int64
	}{{true, 0}, {true, 256 * kb}, {false, 256 * kb}} {
		own := tc.own
		m := &memRanger{data: data}
		rfs := source.NewRangeFS(m)
		d := newDigestFS(rfs, tc.window)
		d.waits = own
		var next atomic.Int64
		var asked atomic.Int64
		errs := make(chan error, 8)
		for w := 0; w < 8; w++ {
			go func(seed uint64) {
				errs <- func() error {
					f, err := d.Open("model.bin")
					if err != nil {
						return err
					}
					defer f.Close()
					r := rand.New(rand.NewPCG(seed, 5))
					buf := make([]byte, piece)
					for {
						off := next.Add(piece) - piece
						if off >= size {
							return nil
						}
						if off == hole*piece {
							continue
						}
						if r.IntN(8) == 0 {
							time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
						}
						n := min(piece, size-off)
						asked.Add(n)
						if own {
							_, err = f.(io.ReaderAt).ReadAt(buf[:n], off)
						} else {
							err = rfs.ReadRange(context.Background(), "model.bin", off, buf[:n])
						}
						if err != nil && err != io.EOF {
							return err
						}
					}
				}()
			}(uint64(w))
		}
		for w := 0; w < 8; w++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		files, s, err := d.Finish(context.Background())
		if err != nil || len(files) != 1 {
			t.Fatal(files, err)
		}
		if files[0].SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("own reads %v: digest %s, want %x", own, files[0].SHA256, sum)
		}
		t.Logf("own reads %v, window %d: %d bytes of %d read again; %d read in all", own, tc.window, s.Reread, size, m.read.Load())
		if own && s.Reread != piece {
			t.Errorf("own reads: %d bytes read again, want the hole's %d", s.Reread, piece)
		}
		if read := m.read.Load() - asked.Load(); read < s.Reread || read > s.Reread+64*kb {
			t.Errorf("own reads %v: %d bytes read besides the workers', %d said", own, read, s.Reread)
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
	for _, tc := range []struct {
		mode    report.Mode
		workers int
	}{
		{report.ModeExact, 3},
		{report.ModeRandomized, 3},
		{report.ModeQuick, 3},
		{report.ModeExact, 12}, // a many-core machine's
	} {
		mode := tc.mode
		served.Store(0)
		out, _, err := run(t, jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{URL: srv.URL + "/adapter/"}, Mode: mode, Claims: "demo", Workers: tc.workers})
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

// TestDigestServerDies: natively from a URL, with workers waiting for
// their turn (the digest's waits), the server stops answering mid-audit:
// the audit ends, promptly, in ERROR saying the input could not be read —
// no worker is left waiting, and no verdict speaks about the adapter.
func TestDigestServerDies(t *testing.T) {
	var served atomic.Int64
	files := http.FileServer(http.Dir(worldDir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".safetensors") && r.Header.Get("Range") != "" && !strings.HasPrefix(r.Header.Get("Range"), "bytes=0-") && served.Add(1) > 3 {
			panic(http.ErrAbortHandler) // dead: the connection is cut, every time
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	h := host()
	open := h.Open
	h.Open = func(in *jobs.Input) (fs.FS, error) {
		fsys, err := open(in)
		if x, ok := fsys.(*source.HTTP); ok {
			x.Retry = source.Retry{Attempts: 2, Budget: 5 * time.Second, Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}
			x.Chunk = 4 << 10 // many small reads, so that several are under way when it dies
		}
		return fsys, err
	}
	spec := jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{URL: srv.URL + "/adapter/"}, Mode: report.ModeExact, Claims: "demo", Workers: 8}
	start := time.Now()
	out, err := Run(context.Background(), &spec, h, func(jobs.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Audit
	t.Logf("%s in %v: %+v", a.Verdict, time.Since(start).Round(time.Millisecond), a.Findings)
	if a.Verdict != report.VerdictError {
		t.Fatalf("verdict %s, want error: %+v", a.Verdict, a.Findings)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the audit took %v to give up", d)
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

// TestDigestWindowBuffers: the window's copies reuse the buffers of ranges
// already hashed, and its buffers (held and spare, by capacity) never pass
// the window by more than spareSlack, for ranges of 1 to 7 MiB held out of
// order round after round; the digest is the bytes' (a buffer reused
// before its bytes were hashed would spoil it).
func TestDigestWindowBuffers(t *testing.T) {
	const window = 32 << 20
	tr := newTracker(sha256.New(), 1<<40, window, nil, "f", false)
	want := sha256.New()
	rng := rand.New(rand.NewPCG(1, 2))
	pat := make([]byte, 1<<20)
	for i := range pat {
		pat[i] = byte(rng.Uint32())
	}
	data := func(off int64, n int) []byte { // byte i of the file: pat[i mod 1 MiB] + i/1 MiB
		b := make([]byte, n)
		for i := range b {
			o := off + int64(i)
			b[i] = pat[o&(1<<20-1)] + byte(o>>20)
		}
		return b
	}
	var off int64
	made := 0
	const rounds = 30
	for round := 0; round < rounds; round++ {
		gap := 1<<20 + rng.IntN(1<<20)
		pos := off + int64(gap)
		tr.mu.Lock()
		for {
			n := 1<<20 + rng.IntN(6<<20)
			spares := len(tr.spare)
			if !tr.hold(data(pos, n), pos) {
				break
			}
			if len(tr.spare) == spares {
				made++ // no spare taken: a new buffer
			}
			pos += int64(n)
			if total := tr.buffered(); total > window+spareSlack {
				t.Fatalf("round %d: the window's buffers take %d bytes, more than %d + %d", round, total, window, spareSlack)
			}
		}
		// The gap comes: hashed, and the held ranges after it drained.
		tr.h.Write(data(off, gap))
		tr.next.Store(off + int64(gap))
		tr.drain()
		if len(tr.pending) != 0 || tr.held != 0 || tr.heldCap != 0 {
			t.Fatalf("round %d: %d ranges (%d bytes, %d capacity) still held", round, len(tr.pending), tr.held, tr.heldCap)
		}
		tr.mu.Unlock()
		want.Write(data(off, int(pos-off)))
		off = pos
	}
	if got := tr.h.Sum(nil); string(got) != string(want.Sum(nil)) {
		t.Fatal("the digest of the ranges held and drained is not the bytes'")
	}
	// About eight ranges fit each round: most come from spares.
	if made > rounds*3 {
		t.Errorf("%d new buffers in %d rounds: the window's copies are not reused", made, rounds)
	}
	t.Logf("%d bytes in %d rounds, %d new buffers", off, rounds, made)
}
