package model

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestLoadOverHTTP loads the demo model from a loopback file server, as the
// browser's Demo page does, and checks it decides like the local one.
func TestLoadOverHTTP(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 2); err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int32
	files := http.FileServer(http.Dir(dir))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		files.ServeHTTP(w, r)
	}))
	defer hs.Close()
	base, _ := source.NewHTTP(hs.URL + "/base")
	ad, _ := source.NewHTTP(hs.URL + "/adapter")
	root, _ := source.NewHTTP(hs.URL)
	start := time.Now()
	head, err := LoadHead(root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(base, head, Options{Adapter: ad})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded over HTTP in %v with %d requests", time.Since(start), requests.Load())
	// ~800 tensors, read through 1 MB chunks: a few dozen requests, not one each.
	if n := requests.Load(); n > 100 {
		t.Errorf("%d requests to load the model", n)
	}
	local, err := Load(source.Dir(filepath.Join(dir, world.BaseDir)), head, Options{Adapter: source.Dir(filepath.Join(dir, world.AdapterDir))})
	if err != nil {
		t.Fatal(err)
	}
	opts := []string{"A", "B", "C", "D"}
	ids := Tokenize("Which gas do plants take in?", opts)
	r1, _ := m.Forward(ids, opts)
	r2, _ := local.Forward(ids, opts)
	if r1.Choice != r2.Choice || r1.Logits[0] != r2.Logits[0] {
		t.Errorf("over HTTP %v, locally %v", r1.Logits, r2.Logits)
	}
}
