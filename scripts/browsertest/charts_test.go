//go:build browser

package browsertest

// The charts (package chart, drawn in the engine, inserted as SVG): each
// has its axis titles, tick labels, legend and a <title> hover text on its
// marks in the DOM; a click on a heatmap cell (a real pointer click: SVG
// elements have no click()) or on a row of the pairs table opens the pair;
// at 390 px the charts shrink with their viewBox and stay in their cards.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// clickAt clicks the middle of sel with the mouse.
func (p *tab) clickAt(sel string) {
	p.tb.Helper()
	xy, err := eval[[]float64](p, fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.scrollIntoView({block: "center"}); const r = e.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2] })()`, sel))
	if err != nil || len(xy) != 2 {
		p.tb.Fatalf("%s not on the page: %v; the page: %s", sel, err, p.state())
	}
	p.do("clicking "+sel, chromedp.MouseClickXY(xy[0], xy[1]))
}

// texts are the texts of the elements sel matches.
func (p *tab) texts(sel string) []string {
	v, _ := eval[[]string](p, fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, sel))
	return v
}

// hoverless counts the marks sel matches without a <title> of their own
// (or, for a group, a title child).
func hoverless(p *tab, sel string) (n, without int) {
	v, _ := eval[[]int](p, fmt.Sprintf(`(() => { const m = [...document.querySelectorAll(%q)]; return [m.length, m.filter(e => !(e.querySelector(":scope > title") || {}).textContent).length] })()`, sel))
	if len(v) != 2 {
		return 0, -1
	}
	return v[0], v[1]
}

// chartsFit: at 390 px every chart is within its card (the SVG scales
// down with its viewBox).
func chartsFit(t *testing.T, p *tab, what string) {
	t.Helper()
	p.do("a 390 px viewport", chromedp.EmulateViewport(390, 900))
	defer p.do("back to 1280 px", chromedp.EmulateViewport(1280, 1000))
	bad, err := eval[[]string](p, `[...document.querySelectorAll("svg.chart")].filter(s => { const r = s.getBoundingClientRect(), c = s.closest(".card").getBoundingClientRect(); return r.width < 50 || r.right > c.right + 0.5 || r.left < c.left - 0.5 }).map(s => s.id + " " + Math.round(s.getBoundingClientRect().width) + "px")`)
	if err != nil || len(bad) > 0 {
		t.Errorf("%s at 390 px: charts outside their cards: %v %v", what, bad, err)
	}
	p.shot(what + "-390")
}

func TestBrowserChartsAudit(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/", "#load-demo")
	p.click("#load-demo")
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		t.Fatalf("no PASS verdict for the demo world: %v", err)
	}
	if err := p.waitJS("the adapter heatmap", visible("#pair-grid"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, without := hoverless(p, "#pair-grid g[data-pair]"); n != 186 || without != 0 {
		t.Errorf("heatmap: %d cells with data-pair (want 186), %d without a hover title", n, without)
	}
	if got := p.texts("#pair-grid .c-xa"); len(got) != 1 || got[0] != "layer" {
		t.Errorf("heatmap axis title %v", got)
	}
	if got := p.texts("#pair-grid .c-xt"); len(got) < 6 || got[0] != "40" {
		t.Errorf("heatmap layer labels %v", got)
	}
	if got := p.texts("#pair-grid .c-st"); len(got) < 2 {
		t.Errorf("heatmap colour scale ticks %v", got)
	}
	if c := p.text("#pair-grid-fig .caption"); !strings.Contains(c, "186 pairs") {
		t.Errorf("heatmap caption %q", c)
	}
	p.shot("charts-audit-grid")
	// A real click on a cell opens its pair.
	const mod = "model.language_model.layers.41.mlp.down_proj"
	p.clickAt(fmt.Sprintf(`#pair-grid g[data-pair=%q] rect`, mod))
	if err := p.waitJS("the pair's spectrum", visible("#pair-spectrum"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if h := p.text("#pair-detail h2"); h != mod {
		t.Errorf("the cell opened %q, want %s", h, mod)
	}
	if n, without := hoverless(p, "#pair-spectrum circle.c-dot"); n != 16 || without != 0 {
		t.Errorf("spectrum: %d dots (want r = 16), %d without a hover value", n, without)
	}
	if n, without := hoverless(p, "#pair-spectrum circle.c-ring"); n != 16 || without != 0 {
		t.Errorf("spectrum: %d rings of the report's σᵢ (want 16), %d without a hover value", n, without)
	}
	if got := p.texts("#pair-spectrum .c-ya"); len(got) != 1 || got[0] != "σᵢ of s·B·A" {
		t.Errorf("spectrum y title %v", got)
	}
	if got := p.texts("#pair-spectrum .c-yt"); len(got) < 2 || !strings.HasPrefix(got[0], "10") {
		t.Errorf("spectrum log ticks %v", got)
	}
	lg := strings.Join(p.texts("#pair-spectrum .c-lg"), "|")
	for _, want := range []string{"measured σᵢ", "extraction report σᵢ", "tolerance ±", "rank cut"} {
		if !strings.Contains(lg, want) {
			t.Errorf("spectrum legend %q lacks %q", lg, want)
		}
	}
	if f := p.texts("#pair-spectrum .c-form"); len(f) != 1 || !strings.Contains(f[0], "SVD-form deviation") {
		t.Errorf("form deviation %v", f)
	}
	p.shot("charts-audit-pair")
	// A row of the pairs table opens its pair too.
	// (the row shows the module under its layer: the pair opened is
	// model.language_model.layers.<layer>.<module>)
	row, _ := eval[string](p, `(() => { const c = document.querySelectorAll("#matrices tbody tr:nth-child(3) td"); return "layers." + c[2].innerText.trim() + "." + c[1].innerText.trim() })()`)
	p.click("#matrices tbody tr:nth-child(3) td:nth-child(2)")
	if _, err := p.waitText("#pair-detail h2", row, 30*time.Second); err != nil || row == "layers.." {
		t.Errorf("a row click did not open %q: %v", row, err)
	}
	// Another metric.
	p.choose("#grid-metric", "form")
	if _, err := p.waitText("#pair-grid-fig .caption", "SVD-form deviation of each of the 186 pairs", 30*time.Second); err != nil {
		t.Error(err)
	}
	if tl := p.texts("#pair-grid .c-tl"); len(tl) != 1 || !strings.HasPrefix(tl[0], "tolerance ") {
		t.Errorf("form deviation's tolerance on the scale: %v", tl)
	}
	chartsFit(t, p, "charts-audit")
}

func TestBrowserChartsDecisionsHidden(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/decisions", "#use-demo")
	p.click("#use-demo")
	if _, err := p.waitText("#run", "Run 36 records", 2*time.Minute); err != nil {
		t.Fatalf("records not loaded: %v", err)
	}
	p.click("#run")
	if err := p.waitJS("the latency histogram", visible("#latency-histogram"), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := p.texts("#latency-histogram .c-xa"); len(got) != 1 || got[0] != "latency (ms)" {
		t.Errorf("latency x title %v", got)
	}
	q := p.texts("#latency-histogram line.c-q > title")
	if len(q) != 2 || !strings.HasPrefix(q[0], "p50 ") || !strings.HasPrefix(q[1], "p90 ") || !strings.HasSuffix(q[1], " ms") {
		t.Errorf("p50/p90 markers %v", q)
	}
	if n, without := hoverless(p, "#latency-histogram rect.c-bar"); n == 0 || without != 0 {
		t.Errorf("%d bins, %d without a hover count", n, without)
	}
	if got := p.texts("#agreement-chart .c-n"); len(got) == 0 {
		t.Errorf("agreement by dataset: no counts")
	}
	p.shot("charts-decisions")
	chartsFit(t, p, "charts-decisions")

	p.open(p.env.url+"/hidden", "#hidden-demo")
	p.click("#hidden-demo")
	if _, err := p.waitText("#hidden-verdict", "PASS", 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	if n, without := hoverless(p, "#drift-plot rect.c-bar"); n != 48 || without != 0 {
		t.Errorf("drift: %d bars (want 2 × 24 layers), %d without a hover value", n, without)
	}
	if got := p.texts("#drift-plot .c-ya"); len(got) != 2 || got[0] != "worst rel. L2" || got[1] != "worst 1 − cos" {
		t.Errorf("drift axis titles %v", got)
	}
	if got := p.texts("#drift-plot .c-tl"); len(got) != 2 || !strings.HasPrefix(got[0], "tolerance 0.016") {
		t.Errorf("drift tolerance labels %v", got)
	}
	// A record's own drift: click its row.
	id, _ := eval[string](p, `document.querySelector("#hidden-records tbody tr:first-child td").innerText.trim()`)
	p.click("#hidden-records tbody tr:first-child td:nth-child(2)")
	if err := p.waitJS("the record's drift", visible("#record-drift"), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if h := p.text("#record-detail h2"); h != id || id == "" {
		t.Errorf("the row opened %q, want %q", h, id)
	}
	if n, without := hoverless(p, "#record-drift rect.c-bar"); n != 48 || without != 0 {
		t.Errorf("record drift: %d bars (want 48), %d without a hover value", n, without)
	}
	p.shot("charts-hidden")
	chartsFit(t, p, "charts-hidden")
}
