//go:build browser

package browsertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserNoAnswer: the engine's requests in the browser
// (clefcheckFetch, clefcheckFetchRange in public/clefcheck.js) give up a
// request whose answer does not come in time with ClefcheckNoAnswer (which
// the engine retries, fetch.NoAnswer), and the server sees it gone; an
// answer whose body is slow is waited for; a request aborted by its caller
// is an abort, not a missing answer.
func TestBrowserNoAnswer(t *testing.T) {
	e := harness(t)
	site := filepath.Join(t.TempDir(), "site")
	e.clefcheck(t, "site", "--out", site, "--web", e.web, "--world", e.world)
	files := staticHost(site, "")
	var gone atomic.Int32
	body := []byte("0123456789abcdef")
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stall": // never answers
			select {
			case <-r.Context().Done():
				gone.Add(1)
			case <-time.After(20 * time.Second):
			}
		case "/slow": // answers at once, its body after 1.5 s
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-%d/%d", len(body)-1, len(body)))
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusPartialContent)
			w.(http.Flusher).Flush()
			time.Sleep(1500 * time.Millisecond)
			w.Write(body)
		default:
			files.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	p := newTab(t, tabLimit)
	p.open(hs.URL+"/", "#load-demo")
	probe := func(what, js string) string {
		t.Helper()
		s, err := eval[string](p, `(async () => { const t0 = performance.now(); try { const r = await (`+js+`); return "ok " + (r.status || "") + " " + Math.round(performance.now() - t0) } catch (e) { return e.name + " " + Math.round(performance.now() - t0) + " " + e.message } })()`, chromedp.EvalAwaitPromise)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return s
	}
	var name string
	var ms int
	for _, c := range []struct{ what, js string }{
		{"clefcheckFetch", `clefcheckFetch("/stall", "GET", {}, null, 1024, undefined, 800)`},
		{"clefcheckFetchRange", `clefcheckFetchRange("/stall", 0, 15, "", undefined, 800)`},
	} {
		s := probe(c.what, c.js)
		if _, err := fmt.Sscanf(s, "%s %d", &name, &ms); err != nil || name != "ClefcheckNoAnswer" || ms < 700 || ms > 5000 {
			t.Errorf("%s of a server that never answers, 800 ms allowed: %q, want ClefcheckNoAnswer after about 800 ms", c.what, s)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for gone.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if gone.Load() != 2 {
		t.Errorf("the server saw %d of the 2 unanswered requests given up", gone.Load())
	}
	// The answer came in time; its body later than the limit: waited for.
	for _, c := range []struct{ what, js string }{
		{"clefcheckFetch", `clefcheckFetch("/slow", "GET", {Range: "bytes=0-15"}, null, 1024, undefined, 800)`},
		{"clefcheckFetchRange", `clefcheckFetchRange("/slow", 0, 15, "", undefined, 800)`},
	} {
		if s := probe(c.what, c.js); len(s) < 6 || s[:6] != "ok 206" {
			t.Errorf("%s of a slow body, its answer in time: %q, want ok 206", c.what, s)
		}
	}
	// The caller's abort before the limit is an abort.
	s := probe("an abort", `(() => { const ac = new AbortController(); setTimeout(() => ac.abort(), 200); return clefcheckFetch("/stall", "GET", {}, null, 1024, ac.signal, 5000) })()`)
	if _, err := fmt.Sscanf(s, "%s %d", &name, &ms); err != nil || name != "AbortError" || ms > 3000 {
		t.Errorf("a request its caller aborted after 200 ms: %q, want AbortError", s)
	}
}

// TestBrowserDemoWatchdog: a decision that gets no answer in the Demo
// page's time limit (timeout=8: the demo model's first read never
// answered) has the engine worker write its goroutines to the console,
// where the stalled read is, and the decision is asked again of a fresh
// worker; the page shows it, and says it asked twice.
func TestBrowserDemoWatchdog(t *testing.T) {
	e := harness(t)
	site := filepath.Join(t.TempDir(), "site")
	e.clefcheck(t, "site", "--out", site, "--web", e.web, "--world", e.world)
	files := staticHost(site, "")
	var stall, gone atomic.Int32
	stall.Store(1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/demo/") && stall.Add(-1) >= 0 {
			<-r.Context().Done() // until the worker that asked is gone
			gone.Add(1)
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	log := &lockedBuffer{}
	p := newTabLog(t, tabLimit, log)
	p.open(hs.URL+"/embed?where=browser&timeout=8", "#demo-decide")
	start := time.Now()
	if err := p.clickAndSettle("#demo-decide", demoBusy, "the decision asked twice", time.Minute); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if _, err := p.waitText("#demo-result", " ms", 10*time.Second); err != nil {
		p.shot("embed-watchdog")
		t.Fatalf("no decision after the first got no answer: %v (page: %s)", err, clip(p.text("main"), 300))
	}
	p.shot("embed-watchdog")
	if note := p.text("#demo-note"); !strings.Contains(note, "no decision within 8s") || !strings.Contains(note, "asked again") {
		t.Errorf("the page does not say it asked again: %q", note)
	}
	if took < 8*time.Second || took > 40*time.Second {
		t.Errorf("the decision took %v with a time limit of 8 s", took)
	}
	if gone.Load() != 1 {
		t.Errorf("the stalled read was not given up (the first worker not stopped): %d", gone.Load())
	}
	// The stacks the first worker wrote: one line, the stalled read in it.
	var stacks string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, "the engine worker's goroutines (decide job 1: no answer after 8s") {
			stacks = l
		}
	}
	if stacks == "" || !strings.Contains(stacks, "goroutine ") || !strings.Contains(stacks, "source.(*HTTP).read") {
		t.Errorf("the engine worker's goroutines are not on the console with the stalled read: %q", clip(stacks, 600))
	}
}
