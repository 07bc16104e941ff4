//go:build browser

package browsertest

// The Audit page: the demo world audited in the engine's Web Workers, a
// tampered adapter given as files, a claims profile from a file, and a
// site whose engine.wasm is missing.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// tabLimit bounds one test's tab.
const tabLimit = 3 * time.Minute

// engineListed is true once the engine worker has answered the Audit page's
// first job (the built-in claims profiles): until then the claims select
// offers only its default.
var engineListed = hasOption("#claims", "demo")

func TestBrowserAuditDemo(t *testing.T) {
	p := newTab(t, tabLimit)
	start := time.Now()
	p.open(p.env.url+"/", "#load-demo")
	p.click("#load-demo")
	text, err := p.waitText("#verdict", "PASS", 2*time.Minute)
	p.shot("audit-demo")
	if err != nil {
		t.Fatalf("no PASS verdict for the demo world: %v", err)
	}
	rows, _ := eval[int](p, `document.querySelectorAll("#matrices tbody tr").length`)
	if rows != 25 {
		t.Errorf("%d rows in the first page of pairs, want 25 (verdict %q)", rows, text)
	}
	// The pairs were checked in Web Workers (engine.wasm), not in the page,
	// with the SIMD probe kernel (which each worker checks against the
	// portable loop before using it): Chromium has relaxed SIMD, so the
	// module with fused multiply-adds.
	if k := p.text("#kernel"); !strings.Contains(k, "Web Worker") || !strings.Contains(k, "probes wasm-simd-fma") || !strings.Contains(k, "grams wasm-simd-fma") {
		t.Errorf("the pairs were not checked in workers with the SIMD kernels: %q", k)
	}
	// Each worker's memory is reported (the engine worker's and the pool's).
	if k := p.text("#kernel"); !regexp.MustCompile(`memory: engine worker \d[\d.]* [kMG]?B, pool workers \d[\d.]* [kMG]?B`).MatchString(k) {
		t.Errorf("the workers' memory is not reported: %q", k)
	}
	// The quick audit scans with the SIMD kernel too.
	p.choose("#mode", "quick")
	p.click("#load-demo")
	k, err := p.waitText("#kernel", "scan wasm-simd", 2*time.Minute)
	if err != nil || !strings.Contains(k, "Web Worker") {
		t.Errorf("quick audit: %q %v", k, err)
	}
	// A second after an audit's pool stopped, the engine worker starts the
	// next audit's workers (wasm/browser/worker/warm.go): the audit that
	// comes later takes them, and says so (a deep one: its kernel line is
	// not the quick audit's, still shown until it ends).
	time.Sleep(3 * time.Second)
	p.choose("#mode", "randomized")
	p.click("#load-demo")
	if k, err := p.waitText("#kernel", "probes wasm-simd", 2*time.Minute); err != nil || !regexp.MustCompile(`in \d+ Web Workers? \(started before the audit\)`).MatchString(k) {
		t.Errorf("an audit a while after the last did not take warm workers: %q %v", k, err)
	}
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		t.Errorf("the audit with warm workers: %v", err)
	}
	t.Logf("demo audit in the browser: PASS after %v", time.Since(start).Round(time.Millisecond))
}

func TestBrowserTamperedFiles(t *testing.T) {
	p := newTab(t, tabLimit)
	// A tampered copy: the config claims DoRA.
	dir := t.TempDir()
	for _, f := range []string{"adapter_model.safetensors", "extraction-report.json"} {
		data, err := os.ReadFile(filepath.Join(p.env.world, "adapter", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"peft_type":"LORA","r":16,"lora_alpha":16,"use_dora":true,"target_modules":["q_proj"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.open(p.env.url+"/", "#load-demo")
	// The demo claims are offered once the engine has listed its profiles.
	if err := p.waitJS("the engine worker to list its claims profiles (#claims offering demo)", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.choose("#claims", "demo")
	// First an audit that cannot finish soon: a server that answers no
	// request for a minute. Picking files meanwhile cancels that audit and
	// audits the files (the page shows what was asked for last, never the
	// cancelled audit's "stopped").
	stalled := make(chan struct{})
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		select {
		case <-r.Context().Done():
		case <-stalled:
		case <-time.After(time.Minute):
		}
	}))
	defer stall.Close()
	defer close(stalled)
	p.choose("#adapter-url", stall.URL+"/adapter/")
	p.click("#open-url")
	if err := p.waitJS("the audit of the stalled server to run (#cancel shown)", visible("#cancel"), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	p.upload("#adapter-files", filepath.Join(dir, "adapter_config.json"), filepath.Join(dir, "adapter_model.safetensors"), filepath.Join(dir, "extraction-report.json"))
	if _, err := p.waitText("#verdict", "FAIL", 2*time.Minute); err != nil {
		p.shot("audit-tampered")
		t.Fatalf("no FAIL verdict for a DoRA config picked while another audit ran: %v (page: %s)", err, clip(p.text("main"), 400))
	}
	time.Sleep(time.Second) // the cancelled audit's answer, if it were shown, has come by now
	if v := p.text("#verdict"); !strings.Contains(v, "FAIL") || strings.Contains(p.text("main"), "audit stopped") {
		t.Errorf("the cancelled audit's answer replaced the picked files' verdict: %q, %s", v, clip(p.text("main"), 400))
	}
	// The URL field no longer names the source the picked files replaced.
	if u, _ := eval[string](p, `document.querySelector("#adapter-url").value`); u != "" {
		t.Errorf("after picking files the Adapter field still shows %q", u)
	}
	text, err := p.waitText("#findings", "config.invalid", 30*time.Second)
	p.shot("audit-tampered")
	if err != nil {
		t.Errorf("no config.invalid finding: %v", err)
	}
	// Local files are posted to the workers, which read them in place.
	if k := p.text("#kernel"); !strings.Contains(k, "Web Worker") {
		t.Errorf("the local files were not checked in workers: %q", k)
	}
	if !strings.Contains(text, "DoRA") {
		t.Errorf("findings do not explain the DoRA config: %s", text)
	}
	if s := p.text(".summary"); !strings.Contains(s, "claims: demo") {
		t.Errorf("the summary does not name the demo claims chosen: %q", clip(s, 300))
	}
}

// TestBrowserClaimsFile: the engine lists its built-in profiles for the
// claims select, checks a profile loaded from a file, and audits against
// it; a broken profile file is refused with the reason.
func TestBrowserClaimsFile(t *testing.T) {
	p := newTab(t, tabLimit)
	// The demo profile as clefcheck claims prints it, with another rank.
	var prof map[string]any
	jsonOf(t, p.env.clefcheck(t, "claims", "demo"), &prof)
	prof["name"], prof["rank"] = "rank-seven", 7
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "rank-seven.json"), filepath.Join(dir, "broken.json")
	b, err := json.Marshal(prof)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"name": "x", "rank": "sixteen"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	p.open(p.env.url+"/", "#load-demo")
	if _, err := p.waitText("#claims", "demo", time.Minute); err != nil {
		t.Fatalf("the built-in profiles were not listed: %v", err)
	}
	p.upload("#claims-file", good)
	if _, err := p.waitText("#claims", "file: rank-seven", time.Minute); err != nil {
		t.Fatalf("the claims file was not loaded: %v", err)
	}
	p.click("#load-demo")
	if _, err := p.waitText("#verdict", "FAIL", time.Minute); err != nil {
		p.shot("audit-claims-file")
		t.Fatalf("a claimed rank of 7 did not fail the demo adapter: %v", err)
	}
	if s := p.text(".summary"); !strings.Contains(s, "claims: rank-seven") {
		t.Errorf("the summary does not name the claims file's profile: %q", s)
	}
	p.upload("#claims-file", bad)
	if e, err := p.waitText("#error", "claims file", time.Minute); err != nil || !strings.Contains(e, "rank") {
		t.Errorf("a broken claims file: %q %v", e, err)
	}
}

// TestBrowserNoEngine: a site whose engine.wasm is missing (a half-copied
// host) says so on the page instead of waiting for ever.
func TestBrowserNoEngine(t *testing.T) {
	p := newTab(t, tabLimit)
	hs := staticSite(t, "", func(site string) error { return os.Remove(filepath.Join(site, "web", "engine.wasm")) })
	p.open(hs.URL+"/", "#load-demo")
	p.click("#load-demo")
	if e, err := p.waitText("#error", "engine", 30*time.Second); err != nil {
		p.shot("no-engine")
		t.Fatalf("no error for a missing engine.wasm: %q %v", e, err)
	}
	// An engine.wasm that stops (a Go program that panicked answers
	// nothing more): worker.js says so, and the page shows it instead of
	// waiting forever. Here it "stops" as soon as it is instantiated.
	stops := staticSite(t, "", func(site string) error {
		f := filepath.Join(site, "web", "worker.js")
		b, err := os.ReadFile(f)
		const find = "return go.run(inst).then("
		if err == nil && !strings.Contains(string(b), find) {
			err = fmt.Errorf("worker.js no longer holds %q", find)
		}
		if err != nil {
			return err
		}
		return os.WriteFile(f, []byte(strings.Replace(string(b), find, `console.log("panic: spoilt for the test"); return Promise.resolve().then(`, 1)), 0o644)
	})
	p.open(stops.URL+"/", "#load-demo")
	p.click("#load-demo")
	if e, err := p.waitText("#error", "engine.wasm stopped", 30*time.Second); err != nil || !strings.Contains(e, "panic: spoilt for the test") {
		p.shot("engine-stops")
		t.Fatalf("an engine.wasm that stops: %q %v", e, err)
	}
}

// TestBrowserEngineRestart: an engine worker that never starts (here its
// worker.js does nothing unless it is the restarted one) is started again
// after 30 s, and the job posted to it is done by the new one.
func TestBrowserEngineRestart(t *testing.T) {
	p := newTab(t, tabLimit)
	hs := staticSite(t, "", func(site string) error {
		f := filepath.Join(site, "web", "worker.js")
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		return os.WriteFile(f, append(append([]byte("if (self.location.search.includes(\"restart=\")) {\n"), b...), "\n}\n"...), 0o644)
	})
	p.open(hs.URL+"/embed?where=browser", "#demo-decide")
	start := time.Now()
	p.click("#demo-decide")
	if _, err := p.waitText("#demo-result", " ms", 2*time.Minute); err != nil {
		p.shot("engine-restart")
		t.Fatalf("no decision from a restarted engine worker: %v (page: %s)", err, clip(p.text("main"), 300))
	}
	if d := time.Since(start); d < 25*time.Second {
		t.Errorf("the decision came after %v: the first worker was not the one that never started", d)
	}
}
