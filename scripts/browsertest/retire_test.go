//go:build browser

package browsertest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserRetire: a worker stopped while it loads its scripts reports
// nothing in the scope that started it when stopped by clefcheckRetire
// (public/clefcheck.js; the audit pool's workers are stopped so), which
// ends it once it has loaded.
func TestBrowserRetire(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/", "#load-demo")
	js := `(async () => {
		const src = [...document.querySelectorAll("script")].map((s) => s.src).find((s) => /clefcheck\.js/.test(s)) || "";
		const v = (src.split("?")[1] || "");
		const errors = [];
		self.addEventListener("error", (e) => errors.push(String(e.message)));
		// As the dealer starts them: first the module message (none here,
		// so that each fetches engine.wasm and is stopped while it loads).
		const start = () => {
			const w = new Worker("/web/worker.js" + (v ? "?" + v : "") + "#pool");
			w.postMessage({op: "module"});
			return w;
		};
		const ended = [];
		for (let i = 0; i < 6; i++) {
			const w = start();
			await new Promise((r) => setTimeout(r, i * 15));
			const wrapped = w.terminate.bind(w);
			ended.push(new Promise((r) => { w.terminate = () => { wrapped(); r(true); }; setTimeout(() => r(false), 20000); }));
			clefcheckRetire(w, false);
		}
		const done = await Promise.all(ended);
		await new Promise((r) => setTimeout(r, 500));
		return JSON.stringify({errors, done});
	})()`
	s, err := eval[string](p, js, chromedp.EvalAwaitPromise)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Errors []string
		Done   []bool
	}
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	if len(got.Errors) > 0 {
		t.Errorf("errors reported in the scope that stopped the workers: %q", got.Errors)
	}
	for i, d := range got.Done {
		if !d {
			t.Errorf("worker %d was not stopped once it had loaded", i)
		}
	}
}

// TestBrowserPoolModule: a pool worker (worker.js#pool) instantiates the
// compiled engine.wasm its dealer posts first ({op: "module"},
// wasm/browser/msg.Module) instead of fetching and compiling its own, and
// fetches its own when given none or when the first message is another.
// A module that is not engine.wasm makes the worker report an error: the
// proof that what it runs is what it was given.
func TestBrowserPoolModule(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/", "#load-demo")
	js := `(async () => {
		const src = [...document.querySelectorAll("script")].map((s) => s.src).find((s) => /clefcheck\.js/.test(s)) || "";
		const q = (src.split("?")[1] || "") ? "?" + src.split("?")[1] : "";
		const engine = await WebAssembly.compileStreaming(fetch("/web/engine.wasm" + q));
		const empty = new WebAssembly.Module(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
		// The first message the worker sends back (ready, or error), or "none".
		const first = (post) => new Promise((resolve) => {
			const w = new Worker("/web/worker.js" + q + "#pool");
			const t0 = performance.now();
			const end = (s) => { clearTimeout(timer); w.terminate(); resolve(s); };
			const timer = setTimeout(() => end("none"), 60000);
			w.onmessage = (e) => end(e.data.op + (e.data.op === "error" ? ": " + e.data.msg : "") + " @" + Math.round(performance.now() - t0));
			w.onerror = (e) => end("onerror: " + e.message);
			post(w);
		});
		const times = [];
		for (let i = 0; i < 4; i++) {
			times.push("none " + await first((w) => w.postMessage({op: "module"})));
			times.push("shared " + await first((w) => w.postMessage({op: "module", module: engine})));
		}
		return JSON.stringify({
			times: times.join(", "),
			shared: await first((w) => w.postMessage({op: "module", module: engine})),
			other: await first((w) => w.postMessage({op: "module", module: empty})),
			none: await first((w) => w.postMessage({op: "module"})),
			notModule: await first((w) => w.postMessage({op: "stacks", why: "test"})),
		});
	})()`
	s, err := eval[string](p, js, chromedp.EvalAwaitPromise)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(s), &got); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	t.Logf("first messages, with the ms since the worker was made: %v", got)
	for _, k := range []string{"shared", "none", "notModule"} {
		if !strings.HasPrefix(got[k], "ready @") {
			t.Errorf("%s: the worker's first message is %q, want ready", k, got[k])
		}
	}
	if !strings.HasPrefix(got["other"], "error: engine.wasm: ") {
		t.Errorf("given a module that is not engine.wasm, the worker's first message is %q, want its error: it did not run the module it was given", got["other"])
	}
}
