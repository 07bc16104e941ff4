package source_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
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
	"github.com/kvit-s/clefcheck/wasm/hub/hubtest"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// fast is a retry policy for tests: the default's attempts, short waits.
var fast = source.Retry{Base: 2 * time.Millisecond, Max: 20 * time.Millisecond, MaxRetryAfter: 20 * time.Millisecond, Budget: 10 * time.Second}

// faultWorld is the demo world, with a copy of its adapter whose weights
// hold NaNs (folder "nan").
func faultWorld(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	nan := filepath.Join(dir, "nan")
	os.Mkdir(nan, 0o755)
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors"} {
		data, err := os.ReadFile(filepath.Join(dir, "adapter", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "adapter_model.safetensors" {
			// NaN (as float32 and as two bf16) in the middle of the data.
			start := 8 + int(binary.LittleEndian.Uint64(data))
			at := start + (len(data)-start)/2&^3
			copy(data[at:], []byte{0xc0, 0x7f, 0xc0, 0x7f})
		}
		if err := os.WriteFile(filepath.Join(nan, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// faultyHub publishes dir's folders as repositories test/{folder} (gated
// behind token when it is not "") on a Hub simulator that faults a
// fraction rate of the requests for bytes.
func faultyHub(t *testing.T, dir string, rate float64, seed uint64, token string, folders ...string) *hubtest.Hub {
	t.Helper()
	hub := hubtest.New()
	hub.FaultRate, hub.Seed = rate, seed
	for _, f := range folders {
		if _, err := hub.Add("test/"+f, "main", filepath.Join(dir, f), token); err != nil {
			t.Fatal(err)
		}
	}
	return hub
}

// hubSource is folder of the hub read with small chunks (many requests)
// and the fast policy.
func hubSource(t *testing.T, hub *hubtest.Hub, folder string) *source.HTTP {
	t.Helper()
	h, err := source.NewHTTP(hub.Base("test/"+folder, "main"))
	if err != nil {
		t.Fatal(err)
	}
	h.Chunk, h.FirstChunk, h.Retry = 32<<10, 16<<10, fast
	return h
}

func codes(fs []report.Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Code)+"/"+string(f.Severity))
	}
	return strings.Join(out, " ")
}

// TestFaultyHubAudits: the demo adapter served as the Hub serves it (the
// weights 302 to a CDN origin), with one request in five cut mid-body,
// reset, or answered 503 or 429, passes in every mode, and the copy with
// NaNs still fails with values.nonfinite; the reads were retried, the
// redirect followed once per file, no token went to the CDN.
func TestFaultyHubAudits(t *testing.T) {
	dir := faultWorld(t)
	hub := faultyHub(t, dir, 0.2, 7, "s3cret", "adapter", "nan")
	defer hub.Close()
	p, _ := claims.Builtin("demo")
	for _, mode := range []report.Mode{report.ModeQuick, report.ModeRandomized, report.ModeExact} {
		for _, folder := range []string{"adapter", "nan"} {
			h := hubSource(t, hub, folder)
			h.Token = "s3cret"
			start := time.Now()
			res, err := audit.Run(context.Background(), h, ".", audit.Options{Claims: p, Mode: mode, Workers: 2})
			if err != nil {
				t.Fatalf("%s %s: %v", mode, folder, err)
			}
			want := report.VerdictPass
			if folder == "nan" {
				want = report.VerdictFail
			}
			if res.Verdict != want || (folder == "nan" && !strings.Contains(codes(res.Findings), "values.nonfinite/fail")) {
				t.Errorf("%s %s: verdict %s, want %s: %s", mode, folder, res.Verdict, want, codes(res.Findings))
			}
			t.Logf("%s %s: %s in %v, %d reads retried", mode, folder, res.Verdict, time.Since(start).Round(time.Millisecond), h.Retries())
		}
	}
	st := hub.Stats()
	t.Logf("hub: %s", st)
	if st.Faulted() == 0 || st.Redirects == 0 || st.Leaks != 0 {
		t.Errorf("hub: %s", st)
	}
}

// TestFaultyHubRunner: the same through runner.Run with the native host and
// the default policy (the URL as a job's input): a randomized audit passes.
func TestFaultyHubRunner(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out real Retry-After pauses")
	}
	dir := faultWorld(t)
	hub := faultyHub(t, dir, 0.2, 3, "", "adapter")
	defer hub.Close()
	var n runner.Native
	start := time.Now()
	out, err := runner.Run(context.Background(), &jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{URL: hub.Base("test/adapter", "main")}, Claims: "demo", Mode: report.ModeRandomized}, n.Host(), nil)
	if err != nil || out.Audit == nil || out.Audit.Verdict != report.VerdictPass {
		t.Fatalf("%v %+v", err, out)
	}
	t.Logf("randomized audit through runner.Run: %s in %v; hub: %s", out.Audit.Verdict, time.Since(start).Round(time.Millisecond), hub.Stats())
}

// TestHubExpiredURL: once the CDN's signed URL has expired (403), the
// source asks the file's own URL for a fresh one and reads on.
func TestHubExpiredURL(t *testing.T) {
	dir := t.TempDir()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<17)          // 2 MiB
	os.WriteFile(filepath.Join(dir, "big.safetensors"), data, 0o644) // an LFS file: redirected
	hub := faultyHub(t, filepath.Dir(dir), 0, 0, "", filepath.Base(dir))
	defer hub.Close()
	hub.URLTTL = time.Second
	h, _ := source.NewHTTP(hub.Base("test/"+filepath.Base(dir), "main"))
	h.Retry = fast
	f, err := h.Open("big.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	ra := f.(io.ReaderAt)
	buf := make([]byte, 1<<20+1)
	read := func(off int64) {
		t.Helper()
		if _, err := ra.ReadAt(buf, off); err != nil || !bytes.Equal(buf, data[off:off+int64(len(buf))]) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	read(100)
	before := hub.Stats()
	time.Sleep(1100 * time.Millisecond)
	read(1000)
	after := hub.Stats()
	if after.Expired != before.Expired+1 || after.Redirects != before.Redirects+1 || h.Retries() != 1 {
		t.Errorf("expired %d → %d, redirects %d → %d, retries %d: want one of each more", before.Expired, after.Expired, before.Redirects, after.Redirects, h.Retries())
	}
}

// TestHTTPErrorClasses: 404 is missing (and fs.ErrNotExist), 401 refused,
// each tried once; the message names the URL without its query string.
func TestHTTPErrorClasses(t *testing.T) {
	var requests atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/gone.bin":
			w.WriteHeader(404)
		case "/private.bin":
			w.Header().Set("X-Error-Code", "GatedRepo")
			w.WriteHeader(401)
		case "/big.bin": // ignores Range
			w.Write(make([]byte, 1<<20))
		case "/signed.bin":
			http.Redirect(w, r, "/cdn/x?sig=TOPSECRET", http.StatusFound)
		case "/cdn/x":
			w.WriteHeader(404)
		case "/empty.bin":
			w.Header().Set("Content-Range", "bytes */10")
			w.WriteHeader(416)
		}
	}))
	defer hs.Close()
	h, _ := source.NewHTTP(hs.URL)
	h.Retry = fast
	for _, c := range []struct {
		name string
		is   error
		code report.Code
	}{
		{"gone.bin", report.ErrMissing, report.InputMissing},
		{"private.bin", report.ErrRefused, report.InputRefused},
		{"signed.bin", report.ErrMissing, report.InputMissing},
		{"big.bin", nil, ""},
		{"empty.bin", nil, ""},
	} {
		requests.Store(0)
		_, err := h.Open(c.name)
		if err == nil {
			t.Errorf("%s: opened", c.name)
			continue
		}
		if requests.Load() > 2 || strings.Contains(err.Error(), "TOPSECRET") || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%s: %d requests (a permanent answer is not retried), error %q", c.name, requests.Load(), err)
		}
		if c.is == nil {
			if report.CouldNot(err) {
				t.Errorf("%s: %v is classed as could-not-check", c.name, err)
			}
			continue
		}
		if !errors.Is(err, c.is) || (c.is == report.ErrMissing && !errors.Is(err, fs.ErrNotExist)) {
			t.Errorf("%s: %v is not %v", c.name, err, c.is)
		}
		if f := report.ErrorOf(err, c.name); f.Code != c.code {
			t.Errorf("%s: %s, want %s (%s)", c.name, f.Code, c.code, f.Message)
		}
	}
}

// TestHTTPTransientRetried: 503s, a body shorter than its Content-Range
// and a reset connection are retried; Retry-After is honoured up to its
// cap; a host that never answers well gives ErrUnreachable within the
// budget.
func TestHTTPTransientRetried(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefgh"), 8<<10)
	var requests atomic.Int32
	fail := atomic.Int32{} // how many requests fail before one succeeds
	mode := atomic.Value{}
	mode.Store("503")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if fail.Add(-1) >= 0 {
			switch mode.Load() {
			case "503":
				w.Header().Set("Retry-After", "1") // capped to 20 ms by the fast policy
				w.WriteHeader(503)
			case "short": // a lying Content-Range: half the bytes promised
				w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(data)-1, len(data)))
				w.Header().Set("Content-Length", fmt.Sprint(len(data)/2))
				w.WriteHeader(206)
				w.Write(data[:len(data)/2])
			case "reset":
				c, _, _ := w.(http.Hijacker).Hijack()
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			}
			return
		}
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
	}))
	defer hs.Close()
	for _, m := range []string{"503", "short", "reset"} {
		h, _ := source.NewHTTP(hs.URL)
		h.Retry, h.FirstChunk = fast, len(data)
		mode.Store(m)
		fail.Store(3)
		requests.Store(0)
		start := time.Now()
		got, err := source.ReadSmall(h, "f", 1<<20)
		// net/http itself retries a GET whose reused connection was reset
		// before any answer: fewer retries of ours then.
		if err != nil || !bytes.Equal(got, data) || h.Retries() > 3 || h.Retries() < 1 || (m != "reset" && h.Retries() != 3) {
			t.Errorf("%s: %v, %d retries (want 3)", m, err, h.Retries())
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: %v for three retries with waits of at most 20 ms", m, d)
		}
	}
	// Never well: ten attempts (DefaultRetry), then ErrUnreachable, and as many next time.
	h, _ := source.NewHTTP(hs.URL)
	h.Retry = fast
	mode.Store("503")
	fail.Store(1 << 30)
	requests.Store(0)
	_, err := h.Open("f")
	if !errors.Is(err, report.ErrUnreachable) || requests.Load() != 10 || !strings.Contains(err.Error(), "10 attempts") {
		t.Errorf("always 503: %v after %d requests", err, requests.Load())
	}
	requests.Store(0)
	if _, err = h.Open("f"); !errors.Is(err, report.ErrUnreachable) || requests.Load() != 10 {
		t.Errorf("always 503, again: %v after %d requests (want 10: the host answers)", err, requests.Load())
	}
	// A Retry-After beyond the budget: no wait, no second try.
	h, _ = source.NewHTTP(hs.URL)
	h.Retry = source.Retry{Budget: 300 * time.Millisecond}
	requests.Store(0)
	start := time.Now()
	if _, err = h.Open("f"); !errors.Is(err, report.ErrUnreachable) || requests.Load() != 1 || time.Since(start) > 200*time.Millisecond {
		t.Errorf("Retry-After past the budget: %v after %d requests and %v", err, requests.Load(), time.Since(start))
	}
}

// TestHTTPDeadHost: a host that refuses connections is ErrUnreachable
// (input.unreachable) once the attempts are spent, within the budget; the
// source's next read then makes two attempts only.
func TestHTTPDeadHost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h, _ := source.NewHTTP("http://" + addr + "/repo/resolve/main/?token=x")
	h.Retry = source.Retry{Base: 20 * time.Millisecond, Budget: 5 * time.Second}
	start := time.Now()
	_, err = h.Open("adapter_config.json")
	d := time.Since(start)
	if !errors.Is(err, report.ErrUnreachable) || report.ErrorOf(err, "x").Code != report.InputUnreachable || d > 5*time.Second {
		t.Fatalf("dead host: %v after %v", err, d)
	}
	if strings.Contains(err.Error(), "token=") {
		t.Errorf("the query string is in the message: %v", err)
	}
	// No answer at all: the next read retries once, not five times.
	start = time.Now()
	if _, err = h.Open("adapter_model.safetensors"); !errors.Is(err, report.ErrUnreachable) || !strings.Contains(err.Error(), "2 attempts") {
		t.Errorf("dead host, again: %v after %v", err, time.Since(start))
	}
	t.Logf("dead host: %v after %v", err, d.Round(time.Millisecond))
}

// TestHTTPCancel: a context cancelled during a backoff wait or a slow body
// stops the read at once.
func TestHTTPCancel(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.Header().Set("Content-Range", "bytes 0-999/1000")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(206)
			w.Write(make([]byte, 10))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(30 * time.Second):
			}
			return
		}
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(503)
	}))
	defer hs.Close()
	defer hs.CloseClientConnections()
	for _, name := range []string{"wait", "slow"} {
		h, _ := source.NewHTTP(hs.URL)
		ctx, cancel := context.WithCancel(context.Background())
		h.Ctx = ctx
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		_, err := h.Open(name)
		if d := time.Since(start); !errors.Is(err, context.Canceled) || d > time.Second {
			t.Errorf("%s: %v after %v", name, err, d)
		}
		cancel()
	}
}

// TestMissingURLRunner: an audit job whose URL names nothing ends with
// verdict error and input.missing, not FAIL.
func TestMissingURLRunner(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	hub := faultyHub(t, dir, 0, 0, "", "empty")
	defer hub.Close()
	var n runner.Native
	out, err := runner.Run(context.Background(), &jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{URL: hub.Base("test/empty", "main") + "nope/"}, Claims: "demo"}, n.Host(), nil)
	if err != nil || out.Audit == nil || out.Audit.Verdict != report.VerdictError || codes(out.Audit.Findings) != "input.missing/error" {
		t.Fatalf("%v %+v", err, out)
	}
	t.Logf("%s", out.Audit.Findings[0].Message)
}
