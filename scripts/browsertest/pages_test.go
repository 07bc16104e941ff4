//go:build browser

package browsertest

// The other pages: live decisions, hidden states, reconstruct and rebuild,
// the embeddable Demo page, and the static site under a sub-path.

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBrowserDecisions(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/decisions", "#use-demo")
	p.click("#use-demo")
	if _, err := p.waitText("#run", "Run 36 records", 2*time.Minute); err != nil {
		p.shot("decisions")
		t.Fatalf("records not loaded: %v", err)
	}
	p.click("#run")
	text, err := p.waitText("#agreement", "36 of 36 agree", 2*time.Minute)
	if err == nil {
		_, err = p.waitText("#decisions-summary", "known answers", 2*time.Minute)
	}
	p.shot("decisions")
	if err != nil {
		t.Fatalf("agreement not shown (%q): %v", text, err)
	}
}

// TestBrowserHidden: the Hidden states page captures the demo service's
// states live and compares them with the demo world's references.
func TestBrowserHidden(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/hidden", "#hidden-demo")
	p.click("#hidden-demo")
	text, err := p.waitText("#hidden-verdict", "PASS", 3*time.Minute)
	p.shot("hidden")
	if err != nil {
		t.Fatalf("no PASS (%q): %v", text, err)
	}
	bars, _ := eval[int](p, `document.querySelectorAll("#drift-plot rect.c-bar").length`)
	if bars != 2*24 {
		t.Errorf("%d bars in the drift plot, want two per captured layer (rel. L2 and 1 − cos, 24 layers)", bars)
	}
}

// reconBusy is true while the Reconstruct page loads or runs something
// (its demo button is disabled then).
const reconBusy = `document.querySelector("#recon-demo").disabled`

// TestBrowserReconstruct: a block of s·B·A as a heatmap, then the rebuild
// check against the demo's checkpoints.
func TestBrowserReconstruct(t *testing.T) {
	p := newTab(t, tabLimit)
	url := p.env.url
	p.open(url+"/reconstruct", "#recon-demo")
	p.click("#recon-demo")
	if err := p.waitJS("the demo adapter's modules (#recon-sample)", visible("#recon-sample")+" && "+hasOption("#recon-module", "model.language_model.layers.40.mlp.gate_proj"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.choose("#recon-module", "model.language_model.layers.40.mlp.gate_proj")
	p.click("#recon-sample")
	if err := p.waitJS("the block's heatmap", visible("#heatmap"), time.Minute); err != nil {
		t.Fatal(err)
	}
	cells, _ := eval[int](p, `[...document.querySelectorAll("#heatmap rect > title")].filter(t => t.textContent.startsWith("ΔW[")).length`)
	if cells != 32*32 {
		t.Errorf("%d heatmap cells, want 32×32", cells)
	}
	// The checkpoints given as URLs (the demo's, served by range).
	p.choose("#recon-base", url+"/demo/base/")
	p.choose("#recon-tuned", url+"/demo/tuned/")
	if err := p.clickAndSettle("#recon-checkpoints", reconBusy, "the checkpoints' headers read", time.Minute); err != nil {
		t.Fatal(err)
	}
	if e := p.text("#error"); e != "" {
		t.Fatalf("the checkpoint URLs were refused: %s", e)
	}
	p.click("#recon-rebuild")
	text, err := p.waitText("#recon-rebuild-result", "modules rebuilt", 2*time.Minute)
	p.shot("reconstruct")
	if err != nil || !strings.Contains(text, "PASS") || !strings.Contains(text, "186 differ") {
		t.Fatalf("rebuild in the browser: %q %v", clip(text, 300), err)
	}
}

// TestBrowserReconstructLocal: the adapter and both checkpoints (shards
// with their index) given as local files, read in place: the rebuild check
// passes, and the report downloads are offered.
func TestBrowserReconstructLocal(t *testing.T) {
	p := newTab(t, tabLimit)
	w := p.env.world
	base, tuned := listDir(t, filepath.Join(w, "base")), listDir(t, filepath.Join(w, "tuned"))
	if len(base) < 2 {
		t.Fatalf("the demo's base checkpoint should be sharded: %v", base)
	}
	p.open(p.env.url+"/reconstruct", "#recon-demo")
	p.upload("#recon-adapter-files", listDir(t, filepath.Join(w, "adapter"))...)
	if err := p.waitJS("the local adapter's modules (#recon-sample)", visible("#recon-sample"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.upload("#recon-base-files", base...)
	p.upload("#recon-tuned-files", tuned...)
	if err := p.waitJS("the local checkpoints opened (#recon-rebuild)", visible("#recon-rebuild"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.click("#recon-rebuild")
	text, err := p.waitText("#recon-rebuild-result", "modules rebuilt", 2*time.Minute)
	p.shot("reconstruct-local")
	if err != nil || !strings.Contains(text, "PASS") || !strings.Contains(text, "186 differ") {
		t.Fatalf("rebuild from local files: %q %v", clip(text, 300), err)
	}
	n, _ := eval[int](p, `["#recon-download-json", "#recon-download-md"].filter(s => document.querySelector(s)).length`)
	if n != 2 {
		t.Errorf("%d of the 2 report downloads offered", n)
	}
}

// demoBusy is true while the Demo page decides.
const demoBusy = `document.querySelector("#demo-decide").disabled`

// decideInBrowser switches the Demo page to the demo model in this browser
// and decides; the previous decision, if any, is replaced.
func decideInBrowser(t *testing.T, p *tab) (string, error) {
	t.Helper()
	p.choose("#demo-where", "browser")
	// The server field goes once the page has taken the choice.
	if err := p.waitJS("the Demo page to take \"in this browser\" (#demo-server gone)", `!document.querySelector("#demo-server")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.clickAndSettle("#demo-decide", demoBusy, "the in-browser decision", 2*time.Minute); err != nil {
		return "", err
	}
	return p.waitText("#demo-result", " ms", 10*time.Second)
}

// TestBrowserDemoPage: the embeddable page, filled from its query, gets a
// decision with probabilities from the demo service.
func TestBrowserDemoPage(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/embed?prompt=Which+tool+measures+temperature%3F&options=A,B,C,D", "#demo-decide")
	p.click("#demo-decide")
	text, err := p.waitText("#demo-result", " ms", 2*time.Minute)
	p.shot("embed")
	if err != nil {
		t.Fatalf("no decision: %v", err)
	}
	bars, _ := eval[int](p, `document.querySelectorAll("#demo-result .bar").length`)
	prompt, _ := eval[string](p, `document.querySelector("#demo-prompt").value`)
	if bars != 4 || prompt != "Which tool measures temperature?" {
		t.Errorf("%d probability bars, prompt %q: %s", bars, prompt, text)
	}
	server := p.text("#demo-choice")
	// The same decision from the demo model run in this browser.
	text, err = decideInBrowser(t, p)
	p.shot("embed-browser")
	if err != nil {
		t.Fatalf("no in-browser decision: %v", err)
	}
	if local := p.text("#demo-choice"); local != server {
		t.Errorf("in-browser model chose %q, the server %q", local, server)
	}
	t.Logf("in-browser decision: %s", clip(strings.ReplaceAll(text, "\n", " "), 200))
}

// TestBrowserStaticSubpath: the site generated for /clefcheck works from a
// plain static file server under that sub-path, links included.
func TestBrowserStaticSubpath(t *testing.T) {
	p := newTab(t, tabLimit)
	hs := staticSite(t, "/clefcheck", nil)
	t0 := time.Now()
	step := func(what string) { t.Logf("%-40s %v", what, time.Since(t0).Round(time.Millisecond)) }
	defer step("end")
	p.open(hs.URL+"/clefcheck/", "#load-demo")
	p.click("#load-demo")
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		p.shot("static-subpath-audit")
		t.Fatalf("demo audit on the static site: %v", err)
	}
	p.shot("static-subpath-audit")
	step("audit done")
	p.click("#nav-decisions")
	if err := p.waitJS("the Decisions page after its link (#use-demo)", visible("#use-demo"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if loc, _ := eval[string](p, `location.pathname`); loc != "/clefcheck/decisions" {
		t.Errorf("the Decisions link led to %q", loc)
	}
	p.click("#use-demo")
	if _, err := p.waitText("#run", "Run 36 records", 2*time.Minute); err != nil {
		p.shot("static-subpath-decisions")
		t.Fatalf("records not loaded from the static site: %v", err)
	}
	step("records loaded")
	// No server here: the records go through the demo model in the browser.
	p.choose("#decide-where", "browser")
	p.click("#run")
	if _, err := p.waitText("#agreement", "36 of 36 agree", 2*time.Minute); err != nil {
		p.shot("static-subpath-decisions")
		t.Fatalf("in-browser decisions on the static site: %v", err)
	}
	p.shot("static-subpath-decisions")
	step("36 decisions in the browser")
	// A direct visit to a page's URL works too.
	p.open(hs.URL+"/clefcheck/decisions", "#use-demo")
	// With no server, the Demo page decides with the model in the browser.
	p.open(hs.URL+"/clefcheck/embed", "#demo-decide")
	if _, err := decideInBrowser(t, p); err != nil {
		p.shot("static-subpath-embed")
		t.Fatalf("in-browser decision on the static site: %v", err)
	}
}

// TestBrowserReconstructLink: the Reconstruct page opened from a link
// (the demo, a module, a block, a sampled rebuild with its seed; run=1)
// computes that block and runs that sampled rebuild, says what it planned
// and read and how it sampled, and its Copy link gives the same link back.
func TestBrowserReconstructLink(t *testing.T) {
	p := newTab(t, tabLimit)
	const module = "model.language_model.layers.40.linear_attn.in_proj_qkv"
	p.open(p.env.url+"/reconstruct?src=demo&module="+module+"&row=8&col=4&size=16&rows=8&seed=7&run=1", "#recon-demo")
	block, err := p.waitText("#recon-block", "rows 8–23, columns 4–19", time.Minute)
	if err != nil || !strings.Contains(block, module) {
		t.Fatalf("the linked block: %q %v", clip(block, 200), err)
	}
	text, err := p.waitText("#recon-rebuild-result", "modules rebuilt", 2*time.Minute)
	p.shot("reconstruct-sampled")
	if err != nil {
		t.Fatalf("the linked sampled rebuild: %q %v", clip(text, 300), err)
	}
	if s := p.text("#recon-sampling"); !strings.Contains(s, "sampled: 8 rows of each module (seed 7)") || !strings.Contains(s, "Bonferroni") {
		t.Errorf("the sample line: %q", s)
	}
	if s := p.text("#recon-rebuild-plan"); !strings.Contains(s, "8 rows of each of 186 modules") || !strings.Contains(s, "read ") {
		t.Errorf("the plan line: %q", s)
	}
	// The module sampled 8 of its 160 rows: its row says so, with intervals.
	row, _ := eval[string](p, `[...document.querySelectorAll("#recon-rebuild-result tr")].map(r => r.innerText).find(t => t.includes("in_proj_qkv")) || ""`)
	if !strings.Contains(row, "8 of 160") || !strings.Contains(row, "–") {
		t.Errorf("the sampled module's row: %q", row)
	}
	if v := p.text("#rebuild-verdict"); v != "PASS" && v != "WARN" {
		t.Errorf("sampled rebuild of the demo: verdict %q, want PASS or WARN (undecided modules)", v)
	}
	p.click("#copy-link")
	if err := p.waitJS("the page's link (#share-link)", `(document.querySelector("#share-link") || {}).value > ""`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	link, _ := eval[string](p, `document.querySelector("#share-link").value`)
	for _, want := range []string{"/reconstruct?", "src=demo", "module=" + module, "row=8", "col=4", "size=16", "rows=8", "seed=7"} {
		if !strings.Contains(link, want) {
			t.Errorf("the link %q lacks %q", link, want)
		}
	}
}

// TestBrowserEmbedLink: the embeddable page's Copy link keeps its prompt,
// options and where it decides, and that link opens it the same way.
func TestBrowserEmbedLink(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/embed?prompt=Is+water+wet%3F&options=yes,no&where=browser", "#demo-decide")
	if err := p.waitJS("the page to decide in the browser (no server field)", `!document.querySelector("#demo-server")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	p.click("#copy-link")
	if err := p.waitJS("the page's link (#share-link)", `(document.querySelector("#share-link") || {}).value > ""`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	link, _ := eval[string](p, `document.querySelector("#share-link").value`)
	if !strings.Contains(link, "/embed?") || !strings.Contains(link, "prompt=Is+water+wet%3F") || !strings.Contains(link, "options=yes%2Cno") || !strings.Contains(link, "where=browser") {
		t.Fatalf("the widget's link: %q", link)
	}
	q := newTab(t, tabLimit)
	q.open(link, "#demo-decide")
	if err := q.clickAndSettle("#demo-decide", demoBusy, "the in-browser decision", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if text, err := q.waitText("#demo-result", " ms", 10*time.Second); err != nil || strings.Count(q.text("#demo-result"), "%") < 2 {
		t.Errorf("the linked widget's decision: %q %v", text, err)
	}
}
