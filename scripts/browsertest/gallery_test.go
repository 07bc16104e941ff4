//go:build browser

package browsertest

// The gallery: every page in its main states, screenshotted at desktop
// width and at 390 px (CLEFCHECK_SHOTS/gallery-*.png), with no horizontal
// overflow at 360 and 390 px; and the result tables sorted, filtered and
// exported as CSV as a user would.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// overflowJS says what sticks out of the viewport (outside the tables'
// own scrolling boxes), or "" when nothing does.
const overflowJS = `(async () => {
	await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
	const w = document.documentElement.clientWidth;
	if (document.documentElement.scrollWidth <= innerWidth) return "";
	const scrolls = (e) => { for (let p = e.parentElement; p; p = p.parentElement) { const o = getComputedStyle(p).overflowX; if (o === "auto" || o === "scroll" || o === "hidden") return true } return false };
	const out = [...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > w + 1 && !scrolls(e))
		.slice(0, 6).map(e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className && e.className.baseVal === undefined ? "." + e.className : "") + " (" + Math.round(e.getBoundingClientRect().right) + " px)");
	return "scrollWidth " + document.documentElement.scrollWidth + " > " + innerWidth + ": " + out.join(", ");
})()`

// looks checks the page at 360 and 390 px for horizontal overflow and
// saves it at 390 px and at desktop width.
func (p *tab) looks(name string) {
	p.tb.Helper()
	for _, w := range []int64{360, 390} {
		p.do("a viewport of "+fmt.Sprint(w)+" px", chromedp.EmulateViewport(w, 844))
		over, err := eval[string](p, overflowJS, chromedp.EvalAwaitPromise)
		if err != nil {
			p.tb.Errorf("%s at %d px: %v", name, w, err)
		} else if over != "" {
			p.tb.Errorf("%s overflows at %d px: %s", name, w, over)
		}
		if w == 390 {
			p.shot("gallery-" + name + "-390")
		}
	}
	p.do("the desktop viewport", chromedp.EmulateViewport(1280, 1000))
	p.shot("gallery-" + name)
}

// TestBrowserGallery: every page in its main states, at 360, 390 and
// 1280 px.
func TestBrowserGallery(t *testing.T) {
	p := newTab(t, 8*time.Minute)
	url := p.env.url

	p.open(url+"/", "#load-demo")
	if err := p.waitJS("the engine's claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.looks("audit-idle")
	p.click("#load-demo")
	if p.waitJS("the audit's progress", visible("#progress"), 10*time.Second) == nil {
		p.shot("gallery-audit-running")
		if s := p.text("#progress"); strings.Contains(s, "0 B/0 B") || strings.Contains(s, "ETA 0s") || strings.Contains(s, "1 Web Workers") {
			t.Errorf("the progress shows figures it does not know: %q", s)
		}
	}
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	s := p.text(".summary")
	for _, bad := range []string{"from ;", "claims: none", "550272", " 0.00 s"} {
		if strings.Contains(s, bad) {
			t.Errorf("the summary shows %q: %s", bad, s)
		}
	}
	if !strings.Contains(s, "550,272 parameters") {
		t.Errorf("the summary has no thousands separators: %s", s)
	}
	p.looks("audit-result")

	p.open(url+"/codes#pair.missing", "#codes")
	if n, _ := eval[int](p, `document.querySelectorAll("#codes tbody tr").length`); n < 20 {
		t.Errorf("the codes page lists %d codes", n)
	}
	p.looks("codes")

	p.open(url+"/reconstruct", "#recon-demo")
	p.looks("reconstruct-idle")
	p.click("#recon-demo")
	if err := p.waitJS("the demo adapter's modules", visible("#recon-sample")+" && "+hasOption("#recon-module", "model.language_model.layers.40.mlp.gate_proj"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.click("#recon-sample")
	if err := p.waitJS("the block's heatmap", visible("#heatmap"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.choose("#recon-base", url+"/demo/base/")
	p.choose("#recon-tuned", url+"/demo/tuned/")
	if err := p.clickAndSettle("#recon-checkpoints", reconBusy, "the checkpoints' headers read", time.Minute); err != nil {
		t.Fatal(err)
	}
	p.click("#recon-rebuild")
	if _, err := p.waitText("#recon-rebuild-result", "modules rebuilt", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if b := p.text("#recon-rebuild-result"); !strings.Contains(b, "Bounds (") || !strings.Contains(b, "residual/noise ≤") {
		t.Errorf("the rebuild does not say its bounds: %s", clip(b, 300))
	}
	p.looks("reconstruct")

	p.open(url+"/hidden", "#hidden-demo")
	p.looks("hidden-idle")
	p.click("#hidden-demo")
	if _, err := p.waitText("#hidden-verdict", "PASS", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	p.looks("hidden")

	p.open(url+"/decisions", "#use-demo")
	p.looks("decisions-idle")
	p.click("#use-demo")
	if _, err := p.waitText("#run", "Run 36 records", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	p.click("#run")
	if _, err := p.waitText("#agreement", "36 of 36 agree", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := p.waitJS("the decisions table", visible("#decisions"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.looks("decisions")

	p.open(url+"/embed", "#demo-decide")
	p.click("#demo-decide")
	if _, err := p.waitText("#demo-result", " ms", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	p.looks("embed")

	// A request the page cannot use is refused with a message about it.
	p.open(url+"/decisions", "#use-demo")
	p.click("#use-demo")
	if _, err := p.waitText("#run", "Run 36 records", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	p.choose("#server-url", "ftp://example.com")
	p.click("#run")
	if e, err := p.waitText("#error", "decision server", 30*time.Second); err != nil || !strings.Contains(e, "not an http(s) URL") {
		t.Errorf("a bad server URL: %q %v", e, err)
	}
	p.looks("decisions-bad-input")
}

// rowsJS are the pairs table's rows' cells, as text.
const rowsJS = `[...document.querySelectorAll("#matrices tbody tr")].map(r => [...r.cells].map(c => c.innerText))`

// TestBrowserTables: the pairs table sorts by a column (aria-sort, a
// keyboard-reachable button), filters by layer, module and text, and
// downloads what it shows as CSV.
func TestBrowserTables(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/", "#load-demo")
	p.click("#load-demo")
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	// Every header explains itself and sorts.
	n, _ := eval[int](p, `[...document.querySelectorAll("#matrices th")].filter(th => th.title && th.querySelector("button") && th.getAttribute("aria-sort") === "none").length`)
	if n != 10 {
		t.Errorf("%d of the 10 sortable headers have a tooltip, a sort button and aria-sort (the spectrum is not sortable)", n)
	}
	if legend := p.text(".grid:has(#matrices) .legend"); !strings.Contains(legend, "form dev.") || !strings.Contains(legend, "2⁻⁶") {
		t.Errorf("the legend does not explain form dev.: %q", clip(legend, 300))
	}
	sortBy := `[...document.querySelectorAll("#matrices th")][2].querySelector("button")` // layer
	p.run(sortBy + `.focus()`)
	if ok, _ := eval[bool](p, `document.activeElement === `+sortBy); !ok {
		t.Error("a sort button cannot take the keyboard's focus")
	}
	p.run(sortBy + `.click()`)
	if err := p.waitJS("sorted by layer, ascending", `[...document.querySelectorAll("#matrices th")][2].getAttribute("aria-sort") === "ascending"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	p.run(sortBy + `.click()`)
	if err := p.waitJS("sorted by layer, descending", `[...document.querySelectorAll("#matrices th")][2].getAttribute("aria-sort") === "descending"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	rows, _ := eval[[][]string](p, rowsJS)
	if len(rows) != 25 || rows[0][2] != "63" || rows[24][2] != "60" {
		t.Errorf("sorted by layer, descending: first %v, last %v (%d rows)", first(rows, 0), first(rows, len(rows)-1), len(rows))
	}
	// The pager moves on from where it is.
	next := `document.querySelector("#matrices-page").parentElement.querySelector("button:last-child")`
	for _, want := range []string{"page 2 of 8", "page 3 of 8"} {
		p.run(next + `.click()`)
		if _, err := p.waitText("#matrices-page", want, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	p.choose("#matrices-layer", "43")
	if err := p.waitJS("layer 43 only", `document.querySelectorAll("#matrices tbody tr").length === 7`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	p.choose("#matrices-search", "q_proj")
	if err := p.waitJS("layer 43's q_proj", `document.querySelectorAll("#matrices tbody tr").length === 1`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	rows, _ = eval[[][]string](p, rowsJS)
	if len(rows) != 1 || rows[0][1] != "self_attn.q_proj" || rows[0][2] != "43" {
		t.Errorf("filtered: %v", rows)
	}
	if ok, _ := eval[bool](p, `document.querySelector("#matrices-failing").disabled`); !ok {
		t.Error("failing only is offered for a table with no failing row")
	}
	p.choose("#matrices-search", "")
	p.choose("#matrices-module", "mlp.down_proj")
	if err := p.waitJS("layer 43's down_proj", `document.querySelectorAll("#matrices tbody tr").length === 1`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	p.run(`window.__dl = null; const orig = URL.createObjectURL; URL.createObjectURL = (b) => { window.__dl = b; return orig.call(URL, b); }`)
	p.click("#matrices-csv")
	csv, err := eval[string](p, `(async () => { for (let i = 0; i < 100 && !window.__dl; i++) await new Promise(r => setTimeout(r, 100));
		return window.__dl ? await window.__dl.text() : "" })()`, chromedp.EvalAwaitPromise)
	lines := strings.Split(strings.TrimSuffix(csv, "\r\n"), "\r\n")
	if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "status,module,layer,out × in,r,rank,σ₁,form dev.") || !strings.Contains(lines[1], "layers.43.mlp.down_proj,43,64x192,16,") {
		t.Errorf("CSV of layer 43's down_proj: %v %q", err, csv)
	}
	p.shot("tables-filtered")
	// Back to "all layers", chosen as a user does (by its text: its value
	// is empty, which go-app does not write, so the option's value was
	// once its text and filtered by a layer named "all layers").
	p.run(`(() => { const e = document.querySelector("#matrices-layer"); e.selectedIndex = [...e.options].findIndex(o => o.text === "all layers"); e.dispatchEvent(new Event("change")) })()`)
	if err := p.waitJS("every layer's down_proj", `document.querySelectorAll("#matrices tbody tr").length > 1`, 30*time.Second); err != nil {
		t.Fatalf("all layers chosen again: %v (%s)", err, p.text("#matrices-page"))
	}
	// The file choosers are reachable from the keyboard (not display:none).
	for _, id := range []string{"#adapter-files", "#adapter-folder", "#claims-file"} {
		if ok, _ := eval[bool](p, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.focus(); return document.activeElement === e })()`, id)); !ok {
			t.Errorf("%s cannot take the keyboard's focus", id)
		}
	}
	// Findings link to the codes page.
	p.open(p.env.url+"/?src=demo&claims=demo&mode=quick&run=1", "#load-demo")
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if href, _ := eval[string](p, `(document.querySelector("#findings a[href*='/codes#']") || {}).href || ""`); href != "" && !strings.Contains(href, "/codes#") {
		t.Errorf("a finding code links to %q", href)
	}
}

func first(rows [][]string, i int) []string {
	if i < 0 || i >= len(rows) {
		return nil
	}
	return rows[i][:min(3, len(rows[i]))]
}
