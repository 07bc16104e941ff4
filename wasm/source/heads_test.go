package source_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestSeedHeads: a source handed what another one's probes learnt (Heads,
// Seed: the browser's pool workers are handed the engine worker's) opens
// the adapter without a request, reads the same bytes, and still catches a
// file that changed since the first source probed it; heads that cannot be
// a probe's are refused, all of them.
func TestSeedHeads(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	ad := filepath.Join(dir, "adapter")
	const weights = "adapter_model.safetensors"
	orig, err := os.ReadFile(filepath.Join(ad, weights))
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	var replaced atomic.Pointer[[]byte]
	fsrv := http.FileServer(http.Dir(ad))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if path.Base(r.URL.Path) != weights {
			fsrv.ServeHTTP(w, r)
			return
		}
		body, etag := orig, `"v1"`
		if p := replaced.Load(); p != nil {
			body, etag = *p, `"v2"`
		}
		w.Header().Set("ETag", etag)
		http.ServeContent(w, r, weights, time.Time{}, bytes.NewReader(body))
	}))
	defer srv.Close()

	// As a browser pool worker opens it: no report of its own.
	opt := audit.Options{Mode: report.ModeExact, NoAutoReport: true}
	first, err := source.NewHTTP(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := audit.Open(first, ".", opt)
	if err != nil {
		t.Fatal(err)
	}
	sess.Close()
	heads := first.Heads()
	byName := map[string]source.Head{}
	for _, h := range heads {
		byName[h.Name] = h
		want, err := os.ReadFile(filepath.Join(ad, h.Name))
		if err != nil {
			t.Fatalf("head of %q, which is not a file of the adapter: %v", h.Name, err)
		}
		if h.Size != int64(len(want)) || len(h.Bytes) == 0 || !bytes.Equal(h.Bytes, want[:len(h.Bytes)]) {
			t.Errorf("head of %s: %d bytes of %d, not the file's first (%d bytes)", h.Name, len(h.Bytes), h.Size, len(want))
		}
	}
	if w, ok := byName[weights]; !ok || w.ETag != `"v1"` || len(w.Bytes) != 64<<10 {
		t.Fatalf("the weights' head: %+v present %v (want 64 KiB and ETag \"v1\")", len(w.Bytes), ok)
	}
	if _, ok := byName["adapter_config.json"]; !ok {
		t.Fatalf("no head for the config: %v", heads)
	}

	open := func(heads []source.Head) (*source.HTTP, *audit.Session, int32) {
		t.Helper()
		h, err := source.NewHTTP(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Seed(heads); err != nil {
			t.Fatal(err)
		}
		before := requests.Load()
		s, err := audit.Open(h, ".", opt)
		if err != nil {
			t.Fatal(err)
		}
		return h, s, requests.Load() - before
	}
	// Without heads the session asks the server; with them, never.
	_, s0, unseeded := open(nil)
	s0.Close()
	if unseeded == 0 {
		t.Fatal("an unseeded session made no request: the count proves nothing")
	}
	seeded, s1, n := open(heads)
	defer s1.Close()
	if n != 0 {
		t.Fatalf("a seeded session made %d requests to open the adapter (unseeded: %d)", n, unseeded)
	}
	f, err := seeded.Open(weights)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, orig) {
		t.Fatalf("the seeded source read %d bytes (%v), not the file's %d", len(got), err, len(orig))
	}
	// The file changes: a read beyond the heads names the change.
	grown := append(bytes.Clone(orig), 1, 2, 3)
	replaced.Store(&grown)
	changed, s2, _ := open(heads)
	s2.Close()
	g, err := changed.Open(weights)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	if _, err := g.(io.ReaderAt).ReadAt(buf, 128<<10); !errors.Is(err, report.ErrURLChanged) {
		t.Fatalf("a read after the file changed: %v, want %v", err, report.ErrURLChanged)
	}
	// A probe for more than the head asks the server (and sees the change).
	short := []source.Head{{Name: weights, Size: int64(len(orig)), ETag: `"v1"`, Bytes: orig[:10]}}
	h, _ := source.NewHTTP(srv.URL)
	if err := h.Seed(short); err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	if _, err := h.Open(weights); !errors.Is(err, report.ErrURLChanged) || requests.Load() == before {
		t.Fatalf("opening past a 10-byte head: %v after %d requests, want %v from the server", err, requests.Load()-before, report.ErrURLChanged)
	}
	replaced.Store(nil)

	for name, bad := range map[string]source.Head{
		"negative size": {Name: weights, Size: -1, Bytes: []byte{1}},
		"beyond size":   {Name: weights, Size: 1, Bytes: []byte{1, 2}},
		"no bytes":      {Name: weights, Size: 10},
		"not a path":    {Name: "../" + weights, Size: 10, Bytes: []byte{1}},
		"the folder":    {Name: ".", Size: 10, Bytes: []byte{1}},
	} {
		h, _ := source.NewHTTP(srv.URL)
		if err := h.Seed(append([]source.Head{byName["adapter_config.json"]}, bad)); err == nil {
			t.Errorf("%s: seeded", name)
		}
		before := requests.Load()
		if _, err := h.Open("adapter_config.json"); err != nil || requests.Load() == before {
			t.Errorf("%s: the good head beside the bad one was seeded (%v, %d requests)", name, err, requests.Load()-before)
		}
	}
}
