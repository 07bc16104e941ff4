package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// TestDigestReadAhead: a local file above aheadMin is hashed by the
// read-ahead goroutine from its own handle — the check reading out of order
// and closing its file early — and Finish reads nothing again.
func TestDigestReadAhead(t *testing.T) {
	old := aheadMin
	aheadMin = 1 << 20
	defer func() { aheadMin = old }()
	dir := t.TempDir()
	data := make([]byte, 3*aheadChunk+12345)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDigestFS(os.DirFS(dir), 0)
	if d.Reserved() != nil {
		t.Fatal("a core is reserved before any file is open")
	}
	f, err := d.Open("big.bin")
	if err != nil {
		t.Fatal(err)
	}
	hashing := d.Reserved() // the hasher keeps a core until it is done
	if hashing == nil {
		t.Fatal("no core reserved for the read-ahead hasher")
	}
	buf := make([]byte, 1000)
	f.(io.ReaderAt).ReadAt(buf, int64(len(data)-1000)) // out of order
	f.Close()                                          // the check is done before the hasher
	files, sum, err := d.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	if len(files) != 1 || files[0].SHA256 != hex.EncodeToString(want[:]) {
		t.Fatalf("digest %+v, want %x", files, want)
	}
	if sum.Reread != 0 {
		t.Fatalf("Finish read %d bytes again: the read-ahead hasher did not finish the file", sum.Reread)
	}
	select {
	case <-hashing:
	default:
		t.Fatal("the reserved core's channel is still open after Finish")
	}
	if d.Reserved() != nil {
		t.Fatal("a core is still reserved once the hasher is done")
	}
}

// TestDigestHashFile: with Host.HashFile (the browser's digest worker
// reading a picked File itself), every local file is hashed by it — the
// check's reads are not hashed, nothing is read again — and its digests
// are the files'; a hash that fails gives the audit ERROR saying the
// files' SHA-256 could not be computed and what to do, never a digest.
func TestDigestHashFile(t *testing.T) {
	var asked []string
	sizes := map[string]int64{}
	fail := false
	h := host()
	h.HashFile = func(fsys fs.FS, name string, size int64) (func(context.Context) ([]byte, float64, error), bool) {
		asked = append(asked, name)
		sizes[name] = size
		return func(context.Context) ([]byte, float64, error) {
			if fail {
				return nil, 0, errors.New("the digest worker: NotReadableError")
			}
			b, err := fs.ReadFile(fsys, name)
			s := sha256.Sum256(b)
			return s[:], 0.25, err
		}, true
	}
	spec := jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{Files: "adapter"}, Mode: report.ModeExact, Claims: "demo"}
	out, err := Run(context.Background(), &spec, h, func(jobs.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Audit
	if a.Verdict != "pass" || len(asked) == 0 || len(a.Provenance.Files) != len(asked) {
		t.Fatalf("verdict %s, hashed %v, files %+v", a.Verdict, asked, a.Provenance.Files)
	}
	for _, f := range a.Provenance.Files {
		b, err := os.ReadFile(filepath.Join(worldDir, "adapter", f.Name))
		if err != nil {
			t.Fatal(err)
		}
		if want := sha256.Sum256(b); f.SHA256 != hex.EncodeToString(want[:]) {
			t.Errorf("%s: %s, want %x", f.Name, f.SHA256, want)
		}
		if sizes[f.Name] != int64(len(b)) {
			t.Errorf("%s: HashFile was told %d bytes, the file has %d", f.Name, sizes[f.Name], len(b))
		}
	}
	if d := a.Provenance.Digests; d.Reread != 0 || d.Bytes == 0 || d.Seconds < 0.25*float64(len(asked)) {
		t.Errorf("digests %+v", d)
	}
	fail = true
	out, err = Run(context.Background(), &spec, h, func(jobs.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	a = out.Audit
	if a.Verdict != report.VerdictError || len(a.Provenance.Files) != 0 {
		t.Fatalf("with the hash failing: verdict %s, files %+v", a.Verdict, a.Provenance.Files)
	}
	found := false
	for _, f := range a.Findings {
		found = found || strings.Contains(f.Message, "could not be computed") && strings.Contains(f.Message, "NotReadableError") && strings.Contains(f.Message, "run it again")
	}
	if !found {
		t.Errorf("no finding saying the SHA-256 could not be computed, why and what to do: %+v", a.Findings)
	}
}
