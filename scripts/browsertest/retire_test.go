//go:build browser

package browsertest

import (
	"encoding/json"
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
		const start = () => new Worker("/web/worker.js" + (v ? "?" + v : "") + "#pool");
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
