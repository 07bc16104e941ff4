package source_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"github.com/kvit-s/clefcheck/wasm/report"
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

// TestHTTPNoAnswer: a try whose answer (its headers) does not come within
// Retry.Answer is aborted and tried again — a stalled connection does not
// hold the read for the whole budget — while an answer whose body comes
// slowly is waited for (Answer bounds the headers, not the body). Every
// stalled request is given up by the client: the server sees it gone.
func TestHTTPNoAnswer(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	var stall, slowBody atomic.Int32 // requests to stall before answering; to answer, then stall
	var gone atomic.Int32            // stalled requests the client gave up
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stall.Add(-1) >= 0 {
			select {
			case <-r.Context().Done():
				gone.Add(1)
			case <-time.After(10 * time.Second):
			}
			return
		}
		if slowBody.Add(-1) >= 0 {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(data)-1, len(data)))
			w.Header().Set("Content-Length", fmt.Sprint(len(data)))
			w.WriteHeader(206)
			w.(http.Flusher).Flush()
			time.Sleep(600 * time.Millisecond) // longer than Answer
			w.Write(data)
			return
		}
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
	}))
	defer hs.Close()
	policy := source.Retry{Base: 2 * time.Millisecond, Max: 20 * time.Millisecond, Budget: 10 * time.Second, Answer: 200 * time.Millisecond}

	h, _ := source.NewHTTP(hs.URL)
	h.Retry, h.FirstChunk = policy, len(data)
	stall.Store(2)
	start := time.Now()
	got, err := source.ReadSmall(h, "f", 1<<20)
	if err != nil || !bytes.Equal(got, data) || h.Retries() != 2 {
		t.Fatalf("two stalled tries then an answer: %v, %d retries (want 2)", err, h.Retries())
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 3*time.Second {
		t.Errorf("two tries of 200 ms without an answer took %v", d)
	}
	deadline := time.Now().Add(2 * time.Second)
	for gone.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if gone.Load() != 2 {
		t.Errorf("the server saw %d of the 2 stalled requests given up", gone.Load())
	}

	h, _ = source.NewHTTP(hs.URL)
	h.Retry, h.FirstChunk = policy, len(data)
	slowBody.Store(1)
	got, err = source.ReadSmall(h, "f", 1<<20)
	if err != nil || !bytes.Equal(got, data) || h.Retries() != 0 {
		t.Errorf("an answer whose body came after 600 ms: %v, %d retries (want 0: Answer bounds the headers only)", err, h.Retries())
	}

	// Never an answer: the budget, not forever, with every try aborted.
	h, _ = source.NewHTTP(hs.URL)
	h.Retry, h.FirstChunk = source.Retry{Base: 2 * time.Millisecond, Max: 20 * time.Millisecond, Budget: time.Second, Answer: 150 * time.Millisecond}, len(data)
	stall.Store(1 << 20)
	start = time.Now()
	_, err = source.ReadSmall(h, "f", 1<<20)
	if err == nil || !errors.Is(err, report.ErrUnreachable) || !strings.Contains(err.Error(), "no answer within 150ms") {
		t.Errorf("a server that never answers: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a server that never answers held the read %v (budget 1 s)", d)
	}
	stall.Store(0)
}
