package source_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestAuditOverHTTP audits the demo adapter from a loopback file server
// (which honours Range) and checks that no file was fetched whole.
func TestAuditOverHTTP(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	var served atomic.Int64
	var whole atomic.Int32
	fsrv := http.FileServer(http.Dir(dir))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") == "" {
			whole.Add(1)
		}
		cw := &countingWriter{ResponseWriter: w, n: &served}
		fsrv.ServeHTTP(cw, r)
	}))
	defer hs.Close()
	h, err := source.NewHTTP(hs.URL + "/adapter")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := claims.Builtin("demo")
	res, err := audit.Run(context.Background(), h, ".", audit.Options{Claims: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "pass" || res.Summary.Report == "" {
		t.Fatalf("verdict %s (report %q): %v", res.Verdict, res.Summary.Report, res.Findings)
	}
	st, _ := os.Stat(filepath.Join(dir, "adapter", "adapter_model.safetensors"))
	if whole.Load() != 0 {
		t.Errorf("%d requests without Range", whole.Load())
	}
	// Every tensor once, plus the header chunk and small files: not much more than the file.
	if got := served.Load(); got > st.Size()+3<<20 {
		t.Errorf("served %d bytes for a %d-byte adapter", got, st.Size())
	}
	if _, err := h.Open("nope.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := h.Open("../etc/passwd"); err == nil {
		t.Error("path escape accepted")
	}
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return c.ResponseWriter.Write(p)
}

func TestHTTPWithoutRange(t *testing.T) {
	big := strings.Repeat("x", 200<<10)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small.json":
			w.Write([]byte(`{"r": 8}`))
		case "/big.bin":
			w.Write([]byte(big)) // ignores Range
		default:
			http.NotFound(w, r)
		}
	}))
	defer hs.Close()
	h, _ := source.NewHTTP(hs.URL)
	data, err := source.ReadSmall(h, "small.json", 1<<20)
	if err != nil || string(data) != `{"r": 8}` {
		t.Errorf("small file without Range: %q %v", data, err)
	}
	if _, err := h.Open("big.bin"); err == nil || !strings.Contains(err.Error(), "Range") {
		t.Errorf("big file without Range: %v", err)
	}
	for _, bad := range []string{"ftp://x/", "javascript:alert(1)", "/relative"} {
		if _, err := source.NewHTTP(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
