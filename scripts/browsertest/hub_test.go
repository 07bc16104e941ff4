//go:build browser

package browsertest

// The real inputs in the pages: an adapter from the (simulated) Hub by a
// deep link, with the same verdict and digests as the CLI; the operator's
// flow (records by URL, references from the Hub, a server); folder pickers
// and folder drops; the static site by direct link with no server.

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/hub/hubtest"
)

// simHub publishes the demo world's adapter as kvit-s/clef-lora-r256 on a
// Hub simulator (loopback; CORS on its API and its CDN), with the
// reference folder under reference/ as the card's repository holds it.
func simHub(t *testing.T) (*hubtest.Hub, string) {
	t.Helper()
	e := harness(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(e.world, "adapter"))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "reference"), os.DirFS(filepath.Join(e.world, "reference"))); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	commit, err := h.Add("kvit-s/clef-lora-r256", "main", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	return h, commit
}

// TestBrowserHubAudit: a deep link (?repo=…&rev=…&endpoint=…, and
// ?src=hf://…) audits the adapter from the simulated Hub and gives the
// CLI's verdict and file digests, names the commit it resolved to, and
// offers the attestation and the badge.
func TestBrowserHubAudit(t *testing.T) {
	h, commit := simHub(t)
	e := harness(t)
	t.Setenv("HF_ENDPOINT", h.Endpoint)
	var cli pageAudit
	jsonOf(t, e.clefcheck(t, "audit", "--json", "--no-progress", "--claims", "demo", "--mode", "randomized", "kvit-s/clef-lora-r256@main"), &cli)
	if cli.Verdict != "pass" || len(cli.Provenance.Files) == 0 {
		t.Fatalf("the CLI's audit from the simulated Hub: %+v", cli)
	}
	ep := url.QueryEscape(h.Endpoint)
	for i, q := range []string{"repo=kvit-s/clef-lora-r256&rev=main", "src=" + url.QueryEscape("hf://kvit-s/clef-lora-r256@main")} {
		p := newTab(t, tabLimit)
		p.open(e.url+"/?"+q+"&endpoint="+ep+"&claims=demo&mode=randomized&run=1", "#adapter-url")
		if _, err := p.waitText("#verdict", strings.ToUpper(cli.Verdict), 2*time.Minute); err != nil {
			p.shot("hub-audit")
			t.Fatalf("%s: %v", q, err)
		}
		prov, err := p.waitText("#provenance", "commit", 10*time.Second)
		if i == 0 {
			p.shot("hub-audit")
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(prov, commit) || !strings.Contains(prov, "clefcheck site") {
			t.Errorf("%s: the provenance does not name the commit %s or the engine: %s", q, commit, prov)
		}
		for _, f := range cli.Provenance.Files {
			if !strings.Contains(prov, f.SHA256) {
				t.Errorf("%s: the page's provenance lacks %s's SHA-256 %s (the CLI's)", q, f.Name, f.SHA256)
			}
		}
		if n := strings.Count(prov, "✓ matches"); n != 1 { // the one LFS file the Hub lists a digest for
			t.Errorf("%s: %d files match the Hub's listing, want 1: %s", q, n, prov)
		}
		if r := p.text("#resolved"); !strings.Contains(r, "kvit-s/clef-lora-r256 at main → commit "+commit) {
			t.Errorf("%s: resolved %q", q, r)
		}
		if ok, _ := eval[bool](p, `!document.querySelector("#download-attest").disabled && !document.querySelector("#download-badge").disabled`); !ok {
			t.Errorf("%s: the attestation or the badge is not offered", q)
		}
		// The link round-trips the inputs, and never holds a token.
		p.choose("#hub-token", "hf_secret")
		p.click("#copy-link")
		err = p.waitJS("the page's link (#share-link)", `(document.querySelector("#share-link") || {}).value > ""`, 10*time.Second)
		v, _ := eval[string](p, `document.querySelector("#share-link").value`)
		if err != nil || !strings.Contains(v, "endpoint=") || !strings.Contains(v, "claims=demo") || !strings.Contains(v, "src=") || strings.Contains(v, "hf_secret") {
			t.Errorf("%s: link %q (%v)", q, v, err)
		}
	}
}

// recordsServer serves the demo world's 36 records as one JSONL file, with
// CORS, as a raw GitHub URL would.
func recordsServer(t *testing.T) string {
	t.Helper()
	e := harness(t)
	var all []byte
	for _, f := range listDir(t, filepath.Join(e.world, "records")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", "Content-Range")
		if r.Method == http.MethodOptions {
			w.Header().Set("Access-Control-Allow-Headers", "Range")
			return
		}
		http.ServeContent(w, r, "records.jsonl", time.Time{}, strings.NewReader(string(all)))
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/records/test.jsonl"
}

// TestBrowserOperatorFlow: the operator's records by URL, the card's
// references from the simulated Hub (one click), the demo decision
// service as the operator's server: 36 of 36 agree on the Decisions page,
// and the Hidden states page passes with the same inputs by deep link.
func TestBrowserOperatorFlow(t *testing.T) {
	h, _ := simHub(t)
	e := harness(t)
	recs := recordsServer(t)
	p := newTab(t, tabLimit)
	p.open(e.url+"/decisions?endpoint="+url.QueryEscape(h.Endpoint)+"&server="+url.QueryEscape(e.url), "#records-url")
	if err := p.waitJS("the card's references offered (#card-refs enabled)", `!document.querySelector("#card-refs").disabled`, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.click("#card-refs")
	if err := p.waitJS("the card's references in #ref-url", `document.querySelector("#ref-url").value === "hf://kvit-s/clef-lora-r256/reference"`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.choose("#records-url", recs)
	p.choose("#decide-where", "server")
	if err := p.waitJS("#run enabled by the records given", `!document.querySelector("#run").disabled`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.click("#run")
	if _, err := p.waitText("#agreement", "36 of 36 agree", 2*time.Minute); err != nil {
		p.shot("operator-decisions")
		t.Fatalf("operator flow on the Decisions page: %v", err)
	}
	p.shot("operator-decisions")
	if loc, _ := eval[string](p, `location.search`); !strings.Contains(loc, "reference=hf") || !strings.Contains(loc, "records=") {
		t.Errorf("the address bar does not hold the inputs: %q", loc)
	}
	// The same inputs by deep link on the Hidden states page, started by run=1.
	q := "records=" + url.QueryEscape(recs) + "&reference=" + url.QueryEscape("hf://kvit-s/clef-lora-r256/reference") +
		"&endpoint=" + url.QueryEscape(h.Endpoint) + "&server=" + url.QueryEscape(e.url) + "&run=1"
	p.open(e.url+"/hidden?"+q, "#hidden-run")
	text, err := p.waitText("#hidden-verdict", "PASS", 3*time.Minute)
	p.shot("operator-hidden")
	if err != nil {
		t.Fatalf("operator flow on the Hidden states page: %q %v", text, err)
	}
	if s := p.text(".summary"); !strings.Contains(s, "36 records, 36 compared") || !strings.Contains(s, "hf://kvit-s/clef-lora-r256/reference") {
		t.Errorf("hidden summary: %q", clip(s, 300))
	}
}

// TestBrowserFolders: the folder pickers are real (webkitdirectory in the
// DOM), and a dropped folder is read recursively (webkitGetAsEntry) with
// its files' paths inside it.
func TestBrowserFolders(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/hidden", "#hidden-demo") // the file inputs are hidden in their labels
	for _, sel := range []string{"#refs-folder", "#ref-folder", "#cand-folder"} {
		if ok, _ := eval[bool](p, `document.querySelector("`+sel+`").webkitdirectory === true`); !ok {
			t.Errorf("%s opens no folder chooser (webkitdirectory is not set)", sel)
		}
	}
	p.open(p.env.url+"/", "#load-demo")
	if ok, _ := eval[bool](p, `document.querySelector("#adapter-folder").webkitdirectory === true`); !ok {
		t.Error("#adapter-folder opens no folder chooser")
	}
	// A drop of one folder (reference/ with answers/ and hidden/inner/),
	// as the entries API gives it.
	p.open(p.env.url+"/decisions", "#refs-drop")
	if ok, _ := eval[bool](p, `typeof clefcheckDropOf === "function"`); !ok {
		t.Fatal("folders.js is not loaded (clefcheckDropOf)")
	}
	p.run(`const file = (dir, name) => ({isFile: true, isDirectory: false, fullPath: dir + "/" + name, file: (ok) => ok(new File(["x"], name))});
		const dir = (path, kids) => ({isFile: false, isDirectory: true, fullPath: path, createReader: () => { let done = false; return {readEntries: (ok) => { const b = done ? [] : kids; done = true; setTimeout(() => ok(b)) }} }});
		const root = dir("/reference", [dir("/reference/answers", [file("/reference/answers", "arc.jsonl")]), dir("/reference/hidden", [dir("/reference/hidden/inner", [file("/reference/hidden/inner", "r1.safetensors")])])]);
		const ev = new Event("drop", {bubbles: true, cancelable: true});
		Object.defineProperty(ev, "dataTransfer", {value: {items: [{webkitGetAsEntry: () => root}], files: []}});
		document.querySelector("#refs-drop").dispatchEvent(ev)`)
	text, err := p.waitText("#refs-drop", "2 local files", 10*time.Second)
	if err != nil || !strings.Contains(text, "answers/arc.jsonl") || !strings.Contains(text, "hidden/inner/r1.safetensors") {
		t.Errorf("the dropped folder: %q %v", text, err)
	}
}

// TestBrowserStaticDirect: a site behind a plain file server (no .html
// mapping, no decision service), at the root and under a sub-path: every
// page opens by direct link, /embed has a link to the full tool, and
// Decisions and /embed decide with the demo model in the browser without
// being told to.
func TestBrowserStaticDirect(t *testing.T) {
	e := harness(t)
	for _, prefix := range []string{"", "/clefcheck"} {
		site := filepath.Join(t.TempDir(), "site")
		e.clefcheck(t, "site", "--out", site, "--base", prefix, "--web", e.web, "--world", e.world)
		var hd http.Handler = http.FileServer(http.Dir(site))
		if prefix != "" {
			hd = http.StripPrefix(prefix, hd)
		}
		hs := httptest.NewServer(hd)
		t.Cleanup(hs.Close)
		base := hs.URL + prefix
		p := newTab(t, tabLimit)
		for _, pg := range []struct{ path, sel string }{{"/reconstruct", "#recon-demo"}, {"/hidden", "#hidden-demo"}, {"/decisions", "#use-demo"}, {"/embed", "#demo-decide"}} {
			p.open(base+pg.path, pg.sel)
		}
		if href, _ := eval[string](p, `document.querySelector("#embed-full").getAttribute("href")`); href != prefix+"/" {
			t.Errorf("%q: the Demo page links to %q, not to the full tool", prefix, href)
		}
		if err := p.waitJS("the Demo page to choose the in-browser model (#demo-server gone)", `!document.querySelector("#demo-server")`, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := p.clickAndSettle("#demo-decide", demoBusy, "a decision on the static site", 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := p.waitText("#demo-result", " ms", 10*time.Second); err != nil {
			p.shot("static-direct-embed")
			t.Fatalf("%q: no decision on /embed: %v", prefix, err)
		}
		p.shot("static-direct-embed")
		p.open(base+"/decisions", "#use-demo")
		if err := p.waitJS("Decisions to choose the in-browser model", `document.querySelector("#decide-where").value === "browser"`, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		p.click("#use-demo")
		if _, err := p.waitText("#run", "Run 36 records", 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		p.click("#run")
		if _, err := p.waitText("#agreement", "36 of 36 agree", 2*time.Minute); err != nil {
			p.shot("static-direct-decisions")
			t.Fatalf("%q: decisions on the static site: %v", prefix, err)
		}
		p.shot("static-direct-decisions")
	}
}

// TestBrowserGatedHub: a gated repository on the simulated Hub. Without a
// token the audit is an ERROR that asks for access or a token (never a
// FAIL); with the token typed into the page it passes, the token reaching
// the Hub's API and resolve endpoints but never the CDN it redirects to,
// and never the page's link.
func TestBrowserGatedHub(t *testing.T) {
	e := harness(t)
	h := hubtest.New()
	t.Cleanup(h.Close)
	const token = "hf_gatedsecret"
	if _, err := h.Add("kvit-s/clef-gated", "main", filepath.Join(e.world, "adapter"), token); err != nil {
		t.Fatal(err)
	}
	p := newTab(t, tabLimit)
	p.open(e.url+"/?repo=kvit-s/clef-gated&rev=main&endpoint="+url.QueryEscape(h.Endpoint)+"&claims=demo&mode=randomized&run=1", "#adapter-url")
	text, err := p.waitText("#verdict", "ERROR", 2*time.Minute)
	page := p.text("main")
	p.shot("hub-gated-no-token")
	if err != nil {
		t.Fatalf("a gated repository without a token: verdict %q (%v): %s", text, err, clip(page, 400))
	}
	if !strings.Contains(page, "input.refused") || !strings.Contains(strings.ToLower(page), "token") {
		t.Errorf("without a token the page should say the Hub refused and ask for a token: %s", clip(page, 600))
	}
	p.choose("#hub-token", token)
	p.click("#open-url")
	if err := p.waitJS("the previous verdict to go", `!document.querySelector("#verdict")`, time.Minute); err != nil {
		t.Fatal(err)
	}
	if text, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		p.shot("hub-gated-token")
		t.Fatalf("with the token: verdict %q (%v): %s", text, err, clip(p.text("main"), 400))
	}
	if n := h.TokenReachedCDN(); n != 0 || h.CDNRequests() == 0 {
		t.Errorf("the token reached the CDN %d times (of %d CDN requests)", n, h.CDNRequests())
	}
	p.click("#copy-link")
	if err := p.waitJS("the page's link (#share-link)", `(document.querySelector("#share-link") || {}).value > ""`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if v, _ := eval[string](p, `document.querySelector("#share-link").value`); strings.Contains(v, token) || !strings.Contains(v, "clef-gated") {
		t.Errorf("the link %q holds the token or lacks the repository", v)
	}
}

// TestBrowserReconstructHub: the Reconstruct page with everything from the
// (simulated) Hub: the adapter by repository id, and "the checkpoints of
// demo" — the demo profile's base and tuned repositories at its revision,
// as the card's are for clef-lora-r256 — rebuilt by a sampled rebuild over
// Range (32 rows of each module by default — 4 here —, the plan shown, the
// profile's bounds judging it).
func TestBrowserReconstructHub(t *testing.T) {
	h, _ := simHub(t)
	e := harness(t)
	for id, dir := range map[string]string{"clefcheck/demo-base": "base", "clefcheck/demo-clef": "tuned"} {
		if _, err := h.Add(id, "world-1", filepath.Join(e.world, dir), ""); err != nil {
			t.Fatal(err)
		}
	}
	p := newTab(t, tabLimit)
	p.open(e.url+"/reconstruct?repo=kvit-s/clef-lora-r256&rev=main&endpoint="+url.QueryEscape(h.Endpoint), "#recon-open")
	p.click("#recon-open")
	if err := p.waitJS("the adapter's modules and the profiles' checkpoints", visible("#recon-sample")+` && !!document.querySelector("#recon-card-demo")`, time.Minute); err != nil {
		t.Fatalf("%v: %s", err, clip(p.text("main"), 400))
	}
	before := h.Stats()
	p.click("#recon-card-demo")
	if err := p.waitJS("the card's checkpoints opened (#recon-rebuild)", visible("#recon-rebuild"), time.Minute); err != nil {
		t.Fatalf("%v: %s", err, clip(p.text("main"), 400))
	}
	if v, _ := eval[string](p, `document.querySelector("#recon-rows").value`); v != "32" {
		t.Errorf("rows per module %q after choosing the card's checkpoints, want the sampled default 32", v)
	}
	// Fewer rows keep the test short: every row is one Range request (and
	// a redirect) per checkpoint, some 100 a second here.
	p.choose("#recon-rows", "4")
	p.click("#recon-rebuild")
	text, err := p.waitText("#recon-rebuild-result", "modules rebuilt", 2*time.Minute)
	p.shot("reconstruct-hub")
	if err != nil {
		t.Fatalf("the rebuild against the Hub's checkpoints: %q %v", clip(text, 300), err)
	}
	if v := p.text("#rebuild-verdict"); v != "PASS" && v != "WARN" {
		t.Errorf("verdict %q: %s", v, clip(text, 300))
	}
	if s := p.text("#recon-sampling"); !strings.Contains(s, "4 rows of each module") {
		t.Errorf("the sample line: %q", s)
	}
	if st := h.Stats(); st.Requests == before.Requests {
		t.Errorf("the Hub simulator saw no request for the checkpoints: %s", st)
	}
	if !strings.Contains(text, "186 differ") {
		t.Errorf("the identity check over Range: %q", clip(text, 300))
	}
}
