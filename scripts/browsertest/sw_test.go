//go:build browser

package browsertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserServiceWorker: the site's service worker (web/appworker.js)
// serves the app's shell from its cache and leaves every other request to
// the network. A range of a file it keeps still reaches the server and is
// answered 206 (go-app's default worker answered it from its cache with the
// whole file, 200); a POST and a request for a file it does not keep reach
// the server too, and the page and its workers keep working under it; the
// host gone, a page's link still opens from the cache (at the root and
// under a sub-path).
func TestBrowserServiceWorker(t *testing.T) {
	for _, prefix := range []string{"", "/clefcheck"} {
		t.Run("at "+prefix+"/", func(t *testing.T) { serviceWorker(t, prefix) })
	}
}

func serviceWorker(t *testing.T, prefix string) {
	e := harness(t)
	site := filepath.Join(t.TempDir(), "site")
	e.clefcheck(t, "site", "--out", site, "--base", prefix, "--web", e.web, "--world", e.world)
	var down atomic.Bool // the host gone: every connection closed at once
	var mu sync.Mutex
	seen := map[string]int{} // "METHOD path range" → requests
	var scripts []string     // the workers' scripts asked for, with their queries
	files := staticHost(site, prefix)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		r.URL.Path = strings.TrimPrefix(r.URL.Path, prefix) // counted as at the root
		mu.Lock()
		seen[fmt.Sprintf("%s %s %s", r.Method, r.URL.Path, r.Header.Get("Range"))]++
		if strings.HasSuffix(r.URL.Path, ".js") || r.URL.Path == "/web/engine.wasm" {
			scripts = append(scripts, r.URL.RequestURI())
		}
		mu.Unlock()
		if r.Method == http.MethodPost {
			http.Error(w, `{"error":{"code":"nothing_here","message":"a static site"}}`, http.StatusNotFound)
			return
		}
		r.URL.Path = prefix + r.URL.Path
		files.ServeHTTP(w, r)
	}))
	base := hs.URL + prefix
	t.Cleanup(hs.Close)
	count := func(key string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[key]
	}
	p := newTab(t, tabLimit)
	p.open(base+"/", "#load-demo")
	if err := p.waitJS("the service worker to control the page", `!!navigator.serviceWorker.controller`, time.Minute); err != nil {
		// A page opened before the worker activated is claimed by it; a
		// reload is what a user would do otherwise.
		p.open(base+"/", "#load-demo")
		if err := p.waitJS("the service worker to control the page", `!!navigator.serviceWorker.controller`, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	whole := count("GET /web/app.wasm ")
	if whole == 0 {
		t.Fatal("the server never served app.wasm")
	}
	probe := func(js string) string {
		t.Helper()
		s, err := eval[string](p, js, chromedp.EvalAwaitPromise)
		if err != nil {
			t.Fatalf("%s: %v", clip(js, 120), err)
		}
		return s
	}
	// A kept file, asked for whole: from the cache, the server not asked.
	if s := probe(`(async () => { const r = await fetch("` + prefix + `/web/app.wasm"); const b = await r.arrayBuffer(); return r.status + " " + (b.byteLength > 1000) })()`); s != "200 true" {
		t.Errorf("app.wasm from the page: %q", s)
	}
	if n := count("GET /web/app.wasm "); n != whole {
		t.Errorf("app.wasm asked for whole went to the server (%d requests, %d before): the shell is not served from the cache", n, whole)
	}
	// A range of the same file: the server's answer, 206 and 4 bytes.
	if s := probe(`(async () => { const r = await fetch("` + prefix + `/web/app.wasm", {headers: {Range: "bytes=0-3"}}); const b = new Uint8Array(await r.arrayBuffer()); return r.status + " " + b.length + " " + b[1] })()`); s != "206 4 97" { // "\0asm"
		t.Errorf("a range of app.wasm: %q, want 206 with its 4 bytes (from the server, not the cache's whole file)", s)
	}
	if n := count("GET /web/app.wasm bytes=0-3"); n != 1 {
		t.Errorf("the range reached the server %d times, want 1", n)
	}
	// A POST goes to the server and its answer comes back as it was.
	if s := probe(`(async () => { const r = await fetch("` + prefix + `/v1/systemone", {method: "POST", body: "{}"}); return r.status + " " + (await r.text()).includes("nothing_here") })()`); s != "404 true" {
		t.Errorf("a POST under the service worker: %q", s)
	}
	// The demo audit still runs in the engine's workers under it.
	p.click("#load-demo")
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	var ranges []string
	for k := range seen {
		if strings.Contains(k, "bytes=") && !strings.Contains(k, "app.wasm") {
			ranges = append(ranges, k)
		}
	}
	mu.Unlock()
	if len(ranges) < 2 {
		t.Errorf("the demo audit's reads did not reach the server as ranges: %v", ranges)
	}
	// The workers' scripts carry the site's version (?v=…): a new deploy
	// never pairs a fresh engine.wasm with an older script from the HTTP
	// cache. (The page's own clefcheck.js is go-app's, kept by version in
	// the service worker's cache.)
	mu.Lock()
	defer mu.Unlock()
	versioned := map[string]bool{}
	for _, s := range scripts {
		path, q, _ := strings.Cut(s, "?")
		switch path {
		case "/web/worker.js", "/web/engine.wasm", "/web/digest.js", "/web/digestread.js", "/web/cachewrite.js":
			if !strings.Contains(q, "v=") {
				t.Errorf("%s was asked for without the site's version", s)
			}
		}
		if strings.Contains(q, "v=") {
			versioned[path] = true
		}
	}
	for _, s := range []string{"/web/worker.js", "/web/engine.wasm", "/web/digest.js", "/web/clefcheck.js", "/wasm_exec.js"} {
		if !versioned[s] {
			t.Errorf("no worker asked for %s with the site's version (asked: %v)", s, scripts)
		}
	}
	mu.Unlock()
	// The host gone (every connection closed): a page's link still opens,
	// the start page from the worker's cache showing the page asked for.
	down.Store(true)
	p.open(base+"/embed?where=browser", "#demo-decide")
	if s := p.text("#embed-full"); s == "" {
		t.Errorf("offline, /embed did not show the Demo page: %s", clip(p.text("body"), 200))
	}
	mu.Lock() // for the deferred Unlock
}
