//go:build browser

package main

// Tests in a real browser (Debian's chromium, driven by chromedp): the
// served site loads the demo world and audits it, audits a tampered adapter
// given through the file input, and runs decisions against the demo
// decision service. Screenshots go to $CLEFCHECK_SHOTS (default
// scripts/out/screenshots). Run with: make test-browser.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/source"
)

func chromium(t *testing.T) string {
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	t.Fatal("no chromium: install Debian's chromium (.ci/run does)")
	return ""
}

func browser(t *testing.T) (context.Context, string) {
	t.Helper()
	webDir := os.Getenv("CLEFCHECK_WEB")
	if webDir == "" {
		webDir = "../../build/web"
	}
	h, err := newSiteHandler(webDir, worldDir)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	limit := 3 * time.Minute
	if os.Getenv("CLEFCHECK_FULL") != "" {
		limit = 30 * time.Minute
	}
	ctx, cancel3 := context.WithTimeout(ctx, limit)
	t.Cleanup(cancel3)
	return ctx, hs.URL
}

func shot(t *testing.T, ctx context.Context, name string) {
	dir := os.Getenv("CLEFCHECK_SHOTS")
	if dir == "" {
		dir = "../../scripts/out/screenshots"
	}
	os.MkdirAll(dir, 0o755)
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
}

// waitText waits until the element's text contains want.
func waitText(ctx context.Context, sel, want string) (string, error) {
	var text string
	for {
		var err error
		text, err = chromedp.Run(ctx, chromedp.Text(sel, chromedp.NodeVisible))
		if err == nil && strings.Contains(text, want) {
			return text, nil
		}
		select {
		case <-ctx.Done():
			return text, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func TestBrowserAuditDemo(t *testing.T) {
	ctx, url := browser(t)
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible("#load-demo")); err != nil {
		t.Fatal(err)
	}
	// The wasm app takes over the prerendered page; wait until it reacts.
	time.Sleep(2 * time.Second)
	if err := chromedp.Do(ctx, chromedp.Click("#load-demo")); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	text, err := waitText(wctx, "#verdict", "PASS")
	shot(t, ctx, "audit-demo")
	if err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Text("main"))
		t.Fatalf("no PASS verdict (%q): %v\n%s", text, err, page)
	}
	rows, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#matrices tbody tr").length`))
	if rows != 25 {
		t.Errorf("%d rows in the first page of pairs, want 25", rows)
	}
	// The pairs were checked in Web Workers (engine.wasm), not in the page,
	// with the SIMD probe kernel (which each worker checks against the
	// portable loop before using it).
	if k, _ := chromedp.Run(ctx, chromedp.Text("#kernel")); !strings.Contains(k, "Web Workers") || !strings.Contains(k, "probes wasm-simd") {
		t.Errorf("the pairs were not checked in workers with the SIMD kernel: %q", k)
	}
	// The quick audit scans with the SIMD kernel too.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const m = document.querySelector("#mode"); m.value = "quick"; m.dispatchEvent(new Event("change")); return true })()`)); err != nil {
		t.Fatal(err)
	}
	jsClick(t, ctx, "#load-demo")
	k, err := waitText(wctx, "#kernel", "scan wasm-simd")
	if err != nil || !strings.Contains(k, "scan wasm-simd") || !strings.Contains(k, "Web Workers") {
		t.Errorf("quick audit: %q %v", k, err)
	}
	t.Logf("demo audit in the browser: PASS after %v", time.Since(start).Round(time.Millisecond))
}

func TestBrowserTamperedFiles(t *testing.T) {
	ctx, url := browser(t)
	// A tampered copy: the config claims DoRA.
	dir := t.TempDir()
	for _, f := range []string{"adapter_model.safetensors", "extraction-report.json"} {
		data, err := os.ReadFile(filepath.Join(worldDir, "adapter", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"peft_type":"LORA","r":16,"lora_alpha":16,"use_dora":true,"target_modules":["q_proj"]}`), 0o644)
	files := []string{filepath.Join(dir, "adapter_config.json"), filepath.Join(dir, "adapter_model.safetensors"), filepath.Join(dir, "extraction-report.json")}
	err := chromedp.Do(ctx,
		chromedp.Navigate(url+"/"), chromedp.WaitVisible("#load-demo"), chromedp.Sleep(2*time.Second),
		chromedp.SetValue("#claims", "demo"),
		chromedp.SetUploadFiles("#adapter-files", files),
	)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := waitText(wctx, "#verdict", "FAIL"); err != nil {
		shot(t, ctx, "audit-tampered")
		t.Fatalf("no FAIL verdict: %v", err)
	}
	text, _ := waitText(wctx, "#findings", "config.invalid")
	shot(t, ctx, "audit-tampered")
	// Local files are posted to the workers, which read them in place.
	if k, _ := chromedp.Run(ctx, chromedp.Text("#kernel")); !strings.Contains(k, "Web Workers") {
		t.Errorf("the local files were not checked in workers: %q", k)
	}
	if !strings.Contains(text, "DoRA") {
		t.Errorf("findings do not explain the DoRA config: %s", text)
	}
}

func TestBrowserDecisions(t *testing.T) {
	ctx, url := browser(t)
	err := chromedp.Do(ctx,
		chromedp.Navigate(url+"/decisions"), chromedp.WaitVisible("#use-demo"), chromedp.Sleep(2*time.Second),
		chromedp.Click("#use-demo"),
	)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := waitText(wctx, "#run", "Run 36 records"); err != nil {
		shot(t, ctx, "decisions")
		t.Fatalf("records not loaded: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#run")); err != nil {
		t.Fatal(err)
	}
	text, err := waitText(wctx, "#agreement", "36 of 36 agree")
	if err == nil {
		_, err = waitText(wctx, "#decisions-summary", "known answers")
	}
	shot(t, ctx, "decisions")
	if err != nil {
		t.Fatalf("agreement not shown (%q): %v", text, err)
	}
}

// staticHost serves a generated site under prefix the way static hosts do:
// files as they are, "/x" as "/x.html" when that exists, 404.html otherwise.
func staticHost(dir, prefix string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := filepath.Join(dir, filepath.FromSlash(r.URL.Path))
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			files.ServeHTTP(w, r)
			return
		}
		if _, err := os.Stat(p + ".html"); err == nil {
			r.URL.Path += ".html"
			files.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/" || r.URL.Path == "" {
			http.ServeFile(w, r, filepath.Join(dir, "index.html"))
			return
		}
		w.WriteHeader(404)
		data, _ := os.ReadFile(filepath.Join(dir, "404.html"))
		w.Write(data)
	}))
}

// staticSite generates the static site for prefix (make site), lets edit
// change it (may be nil), and serves it from a plain file server.
func staticSite(t *testing.T, prefix string, edit func(dir string) error) *httptest.Server {
	t.Helper()
	webDir := os.Getenv("CLEFCHECK_WEB")
	if webDir == "" {
		webDir = "../../build/web"
	}
	site := t.TempDir()
	if err := writeSite(site, prefix, webDir, worldDir); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		if err := edit(site); err != nil {
			t.Fatal(err)
		}
	}
	hs := httptest.NewServer(staticHost(site, prefix))
	t.Cleanup(hs.Close)
	return hs
}

// TestBrowserStaticSubpath: the site generated for /clefcheck works from a
// plain static file server under that sub-path, links included.
func TestBrowserStaticSubpath(t *testing.T) {
	ctx, _ := browser(t)
	hs := staticSite(t, "/clefcheck", nil)
	t0 := time.Now()
	step := func(what string) { t.Logf("%-40s %v", what, time.Since(t0).Round(time.Millisecond)) }
	defer step("end")
	err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/clefcheck/"), chromedp.WaitVisible("#load-demo"), chromedp.Sleep(2*time.Second), chromedp.Click("#load-demo"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := waitText(wctx, "#verdict", "PASS"); err != nil {
		shot(t, ctx, "static-subpath-audit")
		t.Fatalf("demo audit on the static site: %v", err)
	}
	shot(t, ctx, "static-subpath-audit")
	step("audit done")
	if err := chromedp.Do(ctx, chromedp.Click("#nav-decisions"), chromedp.WaitVisible("#use-demo")); err != nil {
		t.Fatal(err)
	}
	loc, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
	if loc != "/clefcheck/decisions" {
		t.Errorf("the Decisions link led to %q", loc)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#use-demo")); err != nil {
		t.Fatal(err)
	}
	if _, err := waitText(wctx, "#run", "Run 36 records"); err != nil {
		shot(t, ctx, "static-subpath-decisions")
		t.Fatalf("records not loaded from the static site: %v", err)
	}
	step("records loaded")
	// No server here: the records go through the demo model in the browser.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector("#decide-where"); s.value = "browser"; s.dispatchEvent(new Event("change")); return true })()`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	jsClick(t, ctx, "#run")
	if _, err := waitText(wctx, "#agreement", "36 of 36 agree"); err != nil {
		shot(t, ctx, "static-subpath-decisions")
		t.Fatalf("in-browser decisions on the static site: %v", err)
	}
	shot(t, ctx, "static-subpath-decisions")
	step("36 decisions in the browser")
	// A direct visit to a page's URL works too.
	if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/clefcheck/decisions"), chromedp.WaitVisible("#use-demo")); err != nil {
		t.Fatal(err)
	}
	// With no server, the Demo page decides with the model in the browser.
	if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/clefcheck/embed"), chromedp.WaitVisible("#demo-decide"), chromedp.Sleep(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector("#demo-where"); s.value = "browser"; s.dispatchEvent(new Event("change")); return true })()`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	jsClick(t, ctx, "#demo-decide")
	if _, err := waitText(wctx, "#demo-result", " ms"); err != nil {
		shot(t, ctx, "static-subpath-embed")
		t.Fatalf("in-browser decision on the static site: %v", err)
	}
}

// TestBrowserFullTwinTimings measures the browser on the 1.40 GB twin (set
// CLEFCHECK_FULL to the folder holding adapter/; make bench-browser does):
// the quick and randomized audits' wall time, read over HTTP Range requests
// from loopback, and the longest gap between animation frames meanwhile.
func TestBrowserFullTwinTimings(t *testing.T) {
	full := os.Getenv("CLEFCHECK_FULL")
	if full == "" {
		t.Skip("set CLEFCHECK_FULL (make bench-browser)")
	}
	ctx, url := browser(t)
	files := http.StripPrefix("/twin/", http.FileServer(http.Dir(full)))
	// Another origin, as the Hub would be: it must answer CORS.
	twin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", "Content-Range, Content-Length, Accept-Ranges")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Headers", "Range, Authorization")
			w.WriteHeader(204)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer twin.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible("#load-demo"), chromedp.Sleep(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A frame-gap recorder.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { window.__gap = 0; let last = performance.now();
		const f = (t) => { window.__gap = Math.max(window.__gap, t - last); last = t; requestAnimationFrame(f); }; requestAnimationFrame(f);
		window.__long = []; new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push([Math.round(e.startTime - (window.__t0 || 0)), Math.round(e.duration)]); }).observe({type: "longtask"});
		return true })()`)); err != nil {
		t.Fatal(err)
	}
	// The native CLI on the same file in the same run, for the ratio: the
	// best of two runs (the first may warm the page cache).
	var native time.Duration
	for i := 0; i < 2; i++ {
		nstart := time.Now()
		if bin := os.Getenv("CLEFCHECK_BIN"); bin != "" {
			out, err := exec.Command(bin, "audit", "--quick", "--claims", "clef-lora-r256", filepath.Join(full, "adapter")).CombinedOutput()
			if err != nil {
				t.Fatalf("native quick audit: %v\n%s", err, out)
			}
		} else if nres, err := audit.Run(context.Background(), source.Dir(filepath.Join(full, "adapter")), ".", audit.Options{Quick: true}); err != nil || nres.Verdict == "fail" {
			t.Fatalf("native quick audit: %v %v", err, nres)
		}
		if d := time.Since(nstart); i == 0 || d < native {
			native = d
		}
	}
	t.Logf("native quick audit of the twin (clefcheck audit --quick, best of 2): %v", native.Round(10*time.Millisecond))
	// Each audit from the twin's URL (another origin, read by range) and
	// from the twin given as local files (read in place, no network).
	type benchRun struct {
		name, mode string
		files      bool
	}
	modes := []benchRun{{"quick", "quick", false}, {"quick-files", "quick", true}, {"randomized", "randomized", false}, {"randomized-files", "randomized", true}}
	if os.Getenv("CLEFCHECK_EXACT") != "" {
		modes = append(modes, benchRun{"exact", "exact", false})
	}
	for _, r := range modes {
		run, mode := r.name, r.mode
		if err := chromedp.Do(ctx,
			chromedp.SetValue("#claims", "clef-lora-r256"), chromedp.SetValue("#mode", mode),
			chromedp.SetValue("#adapter-url", twin.URL+"/twin/adapter"),
		); err != nil {
			t.Fatal(err)
		}
		// go-app's ValueTo listens to change events: dispatch them.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`["#claims","#mode","#adapter-url"].forEach(s => document.querySelector(s).dispatchEvent(new Event("change"))) || true`)); err != nil {
			t.Fatal(err)
		}
		chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.__gap = 0, window.__long = [], window.__t0 = performance.now(), true)`))
		start := time.Now()
		var err error
		if r.files {
			// The same files again fire no change event unless the input is cleared.
			chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector("#adapter-files").value = "", true)`))
			ad := filepath.Join(full, "adapter")
			err = chromedp.Do(ctx, chromedp.SetUploadFiles("#adapter-files", []string{filepath.Join(ad, "adapter_config.json"), filepath.Join(ad, "adapter_model.safetensors"), filepath.Join(ad, "extraction-report.json")}))
		} else {
			err = chromedp.Do(ctx, chromedp.Click("#open-url"))
		}
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 12*time.Minute)
		stop := make(chan struct{})
		go func() { // log the page's progress line every 30 s
			for {
				select {
				case <-stop:
					return
				case <-time.After(30 * time.Second):
					line, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector("#progress") || document.querySelector("#error") || document.body).innerText.slice(0, 300)`))
					t.Logf("%s after %v: %s", mode, time.Since(start).Round(time.Second), clip(strings.ReplaceAll(line, "\n", " "), 200))
				}
			}
		}()
		// The summary names the mode of the audit that produced it.
		summaryMode := mode
		// The new audit has started when the previous verdict is gone.
		for {
			gone, err := chromedp.Run(wctx, chromedp.Evaluate[bool](`!document.querySelector("#verdict")`))
			if err != nil || gone {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		// Done when the verdict badge (not the inventory's) shows in a summary
		// of this mode.
		var text string
		for {
			text, err = chromedp.Run(wctx, chromedp.Evaluate[string](`(() => { const v = document.querySelector("#verdict"); const s = document.querySelector(".summary"); return v && s ? s.innerText : "" })()`))
			if err != nil || strings.Contains(text, summaryMode+" audit in") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err == nil && !strings.Contains(text, "PASS") {
			err = fmt.Errorf("verdict is not PASS")
		}
		close(stop)
		cancel()
		wall := time.Since(start)
		gap, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.__gap`))
		shot(t, ctx, "full-twin-"+run)
		if err != nil {
			t.Fatalf("%s audit of the twin: %q %v", mode, text, err)
		}
		kernel, _ := chromedp.Run(ctx, chromedp.Text("#kernel"))
		// The page's long tasks (over 50 ms): [start ms after the click, duration ms].
		long, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.__long.sort((a, b) => b[1] - a[1]).slice(0, 8))`))
		t.Logf("%s: the page's longest tasks [start, ms]: %s", run, long)
		t.Logf("browser %s audit of the 1.40 GB twin (%s): %v wall (%.1f× the native CLI's quick audit), longest frame gap %.0f ms; %s", mode, run, wall.Round(10*time.Millisecond), wall.Seconds()/native.Seconds(), gap, kernel)
	}
	// The floors: the browser reading the twin's bytes and nothing else, as
	// 32 MB pieces four at a time, from the URL and from the local file.
	ad := filepath.Join(full, "adapter", "adapter_model.safetensors")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const i = document.createElement("input"); i.type = "file"; i.id = "floor-file"; document.body.appendChild(i); return true })()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles("#floor-file", []string{ad})); err != nil {
		t.Fatal(err)
	}
	const floorJS = `(async () => {
		const f = document.querySelector("#floor-file").files[0], size = f.size, piece = 32 << 20, url = %q;
		const read = (o) => url ? fetch(url, {headers: {Range: "bytes=" + o + "-" + (Math.min(size, o + piece) - 1)}, cache: "no-store"}).then(r => {
			if (r.status !== 206) throw new Error("HTTP " + r.status + " at " + o); return r.arrayBuffer(); }) : f.slice(o, o + piece).arrayBuffer();
		const t0 = performance.now(); let next = 0, n = 0;
		const lane = async () => { while (next < size) { const o = next; next += piece; const b = await read(o); n += b.byteLength; } };
		await Promise.all([lane(), lane(), lane(), lane()]);
		if (n !== size) throw new Error("read " + n + " of " + size + " bytes");
		return performance.now() - t0; })()`
	for _, src := range []struct{ name, url string }{{"the URL", twin.URL + "/twin/adapter/adapter_model.safetensors"}, {"the local file", ""}} {
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(floorJS, src.url), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("reading the twin from %s: %v", src.name, err)
		}
		t.Logf("floor: the browser reads the twin's 1.40 GB from %s in %.2f s (32 MB pieces, 4 at a time)", src.name, ms/1000)
	}
}

// TestBrowserHidden: the Hidden states page captures the demo service's
// states live and compares them with the demo world's references.
func TestBrowserHidden(t *testing.T) {
	ctx, url := browser(t)
	err := chromedp.Do(ctx, chromedp.Navigate(url+"/hidden"), chromedp.WaitVisible("#hidden-demo"), chromedp.Sleep(2*time.Second), chromedp.Click("#hidden-demo"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	text, err := waitText(wctx, "#hidden-verdict", "PASS")
	shot(t, ctx, "hidden")
	if err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Text("main"))
		t.Fatalf("no PASS (%q): %v\n%s", text, err, clip(page, 2000))
	}
	bars, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#drift-plot rect").length`))
	if bars != 24 {
		t.Errorf("%d bars in the drift plot, want one per captured layer (24)", bars)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// TestBrowserReconstruct: a block of s·B·A as a heatmap, then the rebuild
// check against the demo's checkpoints.
func TestBrowserReconstruct(t *testing.T) {
	ctx, url := browser(t)
	err := chromedp.Do(ctx, chromedp.Navigate(url+"/reconstruct"), chromedp.WaitVisible("#recon-demo"), chromedp.Sleep(2*time.Second),
		chromedp.Click("#recon-demo"), chromedp.WaitVisible("#recon-sample"),
		chromedp.SetValue("#recon-module", "model.language_model.layers.40.mlp.gate_proj"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#recon-module").dispatchEvent(new Event("change")) || true`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#recon-sample"), chromedp.WaitVisible("#heatmap")); err != nil {
		t.Fatal(err)
	}
	cells, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#heatmap rect").length`))
	if cells != 32*32 {
		t.Errorf("%d heatmap cells, want 32×32", cells)
	}
	// The checkpoints given as URLs (the demo's, served by range).
	setJS := fmt.Sprintf(`(() => { for (const [s, v] of [["#recon-base", %q], ["#recon-tuned", %q]]) { const e = document.querySelector(s); e.value = v; e.dispatchEvent(new Event("change")) } return true })()`, url+"/demo/base/", url+"/demo/tuned/")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](setJS)); err != nil {
		t.Fatal(err)
	}
	jsClick(t, ctx, "#recon-checkpoints")
	time.Sleep(2 * time.Second)
	jsClick(t, ctx, "#recon-rebuild")
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	text, err := waitText(wctx, "#recon-rebuild-result", "modules rebuilt")
	shot(t, ctx, "reconstruct")
	if err != nil || !strings.Contains(text, "PASS") || !strings.Contains(text, "186 differ") {
		t.Fatalf("rebuild in the browser: %q %v", clip(text, 300), err)
	}
}

// TestBrowserReconstructLocal: the adapter and both checkpoints (shards
// with their index) given as local files, read in place: the rebuild check
// passes, and the report downloads are offered.
func TestBrowserReconstructLocal(t *testing.T) {
	ctx, url := browser(t)
	list := func(dir string) []string {
		ents, err := os.ReadDir(filepath.Join(worldDir, dir))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, filepath.Join(worldDir, dir, e.Name()))
		}
		return out
	}
	base, tuned := list("base"), list("tuned")
	if len(base) < 2 {
		t.Fatalf("the demo's base checkpoint should be sharded: %v", base)
	}
	err := chromedp.Do(ctx, chromedp.Navigate(url+"/reconstruct"), chromedp.WaitVisible("#recon-demo"), chromedp.Sleep(2*time.Second),
		chromedp.SetUploadFiles("#recon-adapter-files", list("adapter")), chromedp.WaitVisible("#recon-sample"),
		chromedp.SetUploadFiles("#recon-base-files", base), chromedp.SetUploadFiles("#recon-tuned-files", tuned),
		chromedp.WaitVisible("#recon-rebuild"))
	if err != nil {
		t.Fatal(err)
	}
	jsClick(t, ctx, "#recon-rebuild")
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	text, err := waitText(wctx, "#recon-rebuild-result", "modules rebuilt")
	shot(t, ctx, "reconstruct-local")
	if err != nil || !strings.Contains(text, "PASS") || !strings.Contains(text, "186 differ") {
		t.Fatalf("rebuild from local files: %q %v", clip(text, 300), err)
	}
	n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`["#recon-download-json", "#recon-download-md"].filter(s => document.querySelector(s)).length`))
	if n != 2 {
		t.Errorf("%d of the 2 report downloads offered", n)
	}
}

// TestBrowserDemoPage: the embeddable page, filled from its query, gets a
// decision with probabilities from the demo service.
func TestBrowserDemoPage(t *testing.T) {
	ctx, url := browser(t)
	err := chromedp.Do(ctx, chromedp.Navigate(url+"/embed?prompt=Which+tool+measures+temperature%3F&options=A,B,C,D"), chromedp.WaitVisible("#demo-decide"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	jsClick(t, ctx, "#demo-decide")
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	text, err := waitText(wctx, "#demo-result", " ms")
	shot(t, ctx, "embed")
	if err != nil {
		t.Fatalf("no decision: %v", err)
	}
	bars, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#demo-result .bar").length`))
	prompt, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#demo-prompt").value`))
	if bars != 4 || prompt != "Which tool measures temperature?" {
		t.Errorf("%d probability bars, prompt %q: %s", bars, prompt, text)
	}
	server, _ := chromedp.Run(ctx, chromedp.Text("#demo-choice"))
	// The same decision from the demo model run in this browser.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const s = document.querySelector("#demo-where"); s.value = "browser"; s.dispatchEvent(new Event("change")); return true })()`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	jsClick(t, ctx, "#demo-decide")
	time.Sleep(500 * time.Millisecond)
	text, err = waitText(wctx, "#demo-result", " ms")
	shot(t, ctx, "embed-browser")
	if err != nil {
		t.Fatalf("no in-browser decision: %v", err)
	}
	if local, _ := chromedp.Run(ctx, chromedp.Text("#demo-choice")); local != server {
		t.Errorf("in-browser model chose %q, the server %q", local, server)
	}
	t.Logf("in-browser decision: %s", clip(strings.ReplaceAll(text, "\n", " "), 200))
}

// jsClick clicks in one script: go-app may replace a node between a query
// and an action.
func jsClick(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { document.querySelector(%q).click(); return true })()`, sel))); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserClaimsFile: the engine lists its built-in profiles for the
// claims select, checks a profile loaded from a file, and audits against
// it; a broken profile file is refused with the reason.
func TestBrowserClaimsFile(t *testing.T) {
	ctx, url := browser(t)
	data, err := claims.JSON("demo")
	if err != nil {
		t.Fatal(err)
	}
	var prof map[string]any
	json.Unmarshal(data, &prof)
	prof["name"], prof["rank"] = "rank-seven", 7
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "rank-seven.json"), filepath.Join(dir, "broken.json")
	b, _ := json.Marshal(prof)
	os.WriteFile(good, b, 0o644)
	os.WriteFile(bad, []byte(`{"name": "x", "rank": "sixteen"}`), 0o644)

	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/"), chromedp.WaitVisible("#load-demo")); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := waitText(wctx, "#claims", "demo"); err != nil {
		t.Fatalf("the built-in profiles were not listed: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles("#claims-file", []string{good})); err != nil {
		t.Fatal(err)
	}
	if _, err := waitText(wctx, "#claims", "file: rank-seven"); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Text("main"))
		t.Fatalf("the claims file was not loaded: %v\n%s", err, page)
	}
	jsClick(t, ctx, "#load-demo")
	if _, err := waitText(wctx, "#verdict", "FAIL"); err != nil {
		shot(t, ctx, "audit-claims-file")
		t.Fatalf("a claimed rank of 7 did not fail the demo adapter: %v", err)
	}
	if s, _ := chromedp.Run(ctx, chromedp.Text(".summary")); !strings.Contains(s, "claims: rank-seven") {
		t.Errorf("the summary does not name the claims file's profile: %q", s)
	}
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles("#claims-file", []string{bad})); err != nil {
		t.Fatal(err)
	}
	if e, err := waitText(wctx, "#error", "claims file"); err != nil || !strings.Contains(e, "rank") {
		t.Errorf("a broken claims file: %q %v", e, err)
	}
}

// TestBrowserNoEngine: a site whose engine.wasm is missing (a half-copied
// host) says so on the page instead of waiting for ever.
func TestBrowserNoEngine(t *testing.T) {
	ctx, _ := browser(t)
	hs := staticSite(t, "", func(site string) error { return os.Remove(filepath.Join(site, "web", "engine.wasm")) })
	if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible("#load-demo"), chromedp.Sleep(time.Second)); err != nil {
		t.Fatal(err)
	}
	jsClick(t, ctx, "#load-demo")
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if e, err := waitText(wctx, "#error", "engine"); err != nil {
		shot(t, ctx, "no-engine")
		t.Fatalf("no error for a missing engine.wasm: %q %v", e, err)
	}
}
