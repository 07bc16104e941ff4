package source_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestHTTPReadAhead: with a read-ahead window, sequential large reads of
// a file cost one request per window, and return the file's bytes.
func TestHTTPReadAhead(t *testing.T) {
	data := make([]byte, 10<<20)
	for i := range data {
		data[i] = byte(i * 7 >> 3)
	}
	var requests atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.ServeContent(w, r, "f.bin", time.Time{}, bytes.NewReader(data))
	}))
	defer hs.Close()
	for _, ahead := range []int64{0, 4 << 20} {
		h, _ := source.NewHTTP(hs.URL)
		h.ReadAhead = ahead
		f, err := h.Open("f.bin")
		if err != nil {
			t.Fatal(err)
		}
		requests.Store(0)
		buf := make([]byte, 1<<20+333) // above ChunkSize: not served from the small-read chunks
		ra := f.(io.ReaderAt)
		for off := int64(0); off < int64(len(data)); off += int64(len(buf)) {
			n, err := ra.ReadAt(buf, off)
			if (err != nil && err != io.EOF) || !bytes.Equal(buf[:n], data[off:off+int64(n)]) {
				t.Fatalf("ahead %d: bytes at %d differ (%v)", ahead, off, err)
			}
		}
		reads := (len(data) + len(buf) - 1) / len(buf)
		want := reads
		if ahead > 0 {
			want = int((int64(len(data)) + ahead - 1) / ahead) // windows, plus at most one per window boundary
		}
		if got := int(requests.Load()); got > want+want/2+1 || (ahead > 0 && got >= reads) {
			t.Errorf("ahead %d: %d requests for %d reads (want about %d)", ahead, got, reads, want)
		}
	}
}

// TestHTTPPreload: reads inside a preloaded span cost no request and
// return its bytes; reads outside it go to the server.
func TestHTTPPreload(t *testing.T) {
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 5 >> 2)
	}
	var requests atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.ServeContent(w, r, "f.bin", time.Time{}, bytes.NewReader(data))
	}))
	defer hs.Close()
	h, _ := source.NewHTTP(hs.URL)
	f, err := h.Open("f.bin")
	if err != nil {
		t.Fatal(err)
	}
	ra := f.(io.ReaderAt)
	h.Preload("f.bin", 1<<20, bytes.Clone(data[1<<20:3<<20]))
	requests.Store(0)
	buf := make([]byte, 1<<20+5)
	if _, err := ra.ReadAt(buf, 1<<20+7); err != nil || !bytes.Equal(buf, data[1<<20+7:2<<20+12]) || requests.Load() != 0 {
		t.Errorf("inside the span: %v, %d requests", err, requests.Load())
	}
	if _, err := ra.ReadAt(buf, 3<<20-100); err != nil || !bytes.Equal(buf, data[3<<20-100:4<<20-95]) || requests.Load() != 1 {
		t.Errorf("across the span's end: %v, %d requests", err, requests.Load())
	}
}
