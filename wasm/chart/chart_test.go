package chart

import (
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// node is a parsed SVG element.
type node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Kids    []node     `xml:",any"`
}

func (n *node) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *node) num(t *testing.T, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr(name), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.XMLName.Local, name, n.attr(name), err)
	}
	return v
}

// title is an element's <title> child's text.
func (n *node) title() string {
	for _, k := range n.Kids {
		if k.XMLName.Local == "title" {
			return k.Text
		}
	}
	return ""
}

// all lists the elements named name under n, in document order.
func (n *node) all(name string) []*node {
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		if x.XMLName.Local == name {
			out = append(out, x)
		}
		for i := range x.Kids {
			walk(&x.Kids[i])
		}
	}
	walk(n)
	return out
}

// texts is the text of every <text> of class cls (every text when "").
func (n *node) texts(cls string) []string {
	var out []string
	for _, t := range n.all("text") {
		if cls == "" || strings.Contains(" "+t.attr("class")+" ", " "+cls+" ") {
			out = append(out, t.Text)
		}
	}
	return out
}

// parse parses a chart's SVG strictly and checks its caption and role.
func parse(t *testing.T, c *Chart) *node {
	t.Helper()
	if c == nil {
		t.Fatal("no chart")
	}
	var root node
	d := xml.NewDecoder(strings.NewReader(c.SVG))
	d.Strict = true
	if err := d.Decode(&root); err != nil {
		t.Fatalf("the SVG does not parse: %v\n%s", err, c.SVG)
	}
	if root.XMLName.Local != "svg" || root.attr("role") != "img" || root.attr("viewBox") == "" || root.attr("aria-labelledby") != c.ID+"-title "+c.ID+"-desc" {
		t.Errorf("root <%s role=%q viewBox=%q aria-labelledby=%q>", root.XMLName.Local, root.attr("role"), root.attr("viewBox"), root.attr("aria-labelledby"))
	}
	if root.title() != c.Title || len(root.all("desc")) != 1 || root.all("desc")[0].Text != c.Caption || c.Caption == "" {
		t.Errorf("title %q desc %v, want %q and %q", root.title(), root.all("desc"), c.Title, c.Caption)
	}
	if !strings.Contains(c.HTML(), "<figcaption>") {
		t.Error("the page's figure has no caption")
	}
	return &root
}

func eq(a, b []string) bool { return strings.Join(a, "|") == strings.Join(b, "|") }

func TestTicks(t *testing.T) {
	lo, hi, ts := LogTicks(1.3e-3, 0.8, 8)
	var ls []string
	for _, v := range ts {
		ls = append(ls, LogLabel(v))
	}
	if lo != 1e-3 || hi != 1 || !eq(ls, []string{"10⁻³", "10⁻²", "10⁻¹", "1"}) {
		t.Errorf("log ticks [%g, %g] %v", lo, hi, ls)
	}
	// One decade: 2 and 5 between.
	if _, _, ts := LogTicks(0.3, 0.8, 8); len(ts) != 4 || LogLabel(ts[1]) != "2·10⁻¹" || LogLabel(ts[2]) != "5·10⁻¹" || LogLabel(ts[3]) != "1" {
		t.Errorf("two decades: %v", ts)
	}
	// Many decades: every k-th.
	if lo, hi, ts := LogTicks(1e-12, 1, 4); len(ts) > 5 || lo != 1e-12 || hi != 1 {
		t.Errorf("twelve decades in at most 4 steps: [%g, %g] %v", lo, hi, ts)
	}
	lo, hi, lin, step := LinearTicks(3, 97, 5)
	if lo != 0 || hi != 100 || step != 20 || len(lin) != 6 || LinearLabel(lin[2], step) != "40" {
		t.Errorf("linear ticks [%g, %g] step %g: %v", lo, hi, step, lin)
	}
	if _, _, lin, step := LinearTicks(0.0031, 0.0189, 4); step != 0.005 || LinearLabel(lin[1], step) != "0.005" {
		t.Errorf("small linear ticks step %g: %v", step, lin)
	}
	s := Scale{Lo: 1e-3, Hi: 1, A: 200, B: 20, Log: true}
	if p := s.Pos(0.01); math.Abs(p-140) > 1e-9 {
		t.Errorf("10⁻² at %g, want 140", p)
	}
}

// pair is a 16-value spectrum with a report one; σ₁₁ is off the report
// by 50 % (beyond the 1/64 + 2⁻¹⁰ tolerance).
func pair() (*report.AuditMatrix, *report.AuditTol) {
	var sig, ref []float64
	for i := 0; i < 16; i++ {
		v := math.Pow(10, -3*float64(i)/15)
		sig, ref = append(sig, v), append(ref, v)
	}
	sig[10] *= 1.5
	dev := 3e-4
	tol := &report.AuditTol{SigmaRel: 1.0 / 64, SigmaAbs: 1.0 / 1024, FroRel: 1.0 / 64, Form: 1.0 / 128}
	return &report.AuditMatrix{Module: "model.layers.40.mlp.gate_proj", Layer: 40, Short: "mlp.gate_proj", Out: 192, In: 64, Rank: 16, NumRank: 15,
		Sigma: sig, ReportSigma: ref, RankTol: 2e-3, FormDev: &dev, Method: "gram"}, tol
}

func TestSpectrum(t *testing.T) {
	m, tol := pair()
	root := parse(t, Spectrum("spec", m, tol))
	if got := root.texts("c-yt"); !eq(got, []string{"10⁻³", "10⁻²", "10⁻¹", "1"}) {
		t.Errorf("y ticks %v", got)
	}
	if got := root.texts("c-xa"); !eq(got, []string{"index i (of r = 16)"}) {
		t.Errorf("x title %v", got)
	}
	if got := root.texts("c-ya"); !eq(got, []string{"σᵢ of s·B·A"}) {
		t.Errorf("y title %v", got)
	}
	lg := strings.Join(root.texts("c-lg"), "|")
	for _, want := range []string{"measured σᵢ (exact Gram)", "extraction report σᵢ", "tolerance ±(1.562% + 0.0009766·σ₁)", "rank cut"} {
		if !strings.Contains(lg, want) {
			t.Errorf("legend %q lacks %q", lg, want)
		}
	}
	var dots, rings []*node
	for _, c := range root.all("circle") {
		switch c.attr("class") {
		case "c-dot":
			dots = append(dots, c)
		case "c-ring":
			rings = append(rings, c)
		}
	}
	if len(dots) != 16 || len(rings) != 16 || rings[2].title() != "report σ3 = "+Num(m.ReportSigma[2]) {
		t.Fatalf("%d dots and %d report rings, want 16 each; ring 3 %q", len(dots), len(rings), rings[2].title())
	}
	if got := dots[1].title(); !strings.HasPrefix(got, "σ2 = 0.6310, report 0.631") && !strings.HasPrefix(got, "σ2 = 0.631, report 0.631") {
		t.Errorf("σ₂'s hover %q", got)
	}
	if got := dots[10].title(); !strings.HasPrefix(got, "beyond tolerance: σ11 = ") || dots[10].attr("fill") != Red {
		t.Errorf("σ₁₁ (off by 50 %%): hover %q, fill %s", got, dots[10].attr("fill"))
	}
	if n := strings.Count(strings.Join(root.texts("c-bad"), ""), "×"); n != 1 {
		t.Errorf("%d × marks, want 1", n)
	}
	// Positions, computed here independently of the chart's scale: the
	// grid lines of 10⁻³ and 1 bound the log axis, x runs 50–386 for
	// i = 1…16.
	var grid []float64
	for _, l := range root.all("line") {
		if l.attr("class") == "c-gr" {
			grid = append(grid, l.num(t, "y1"))
		}
	}
	if len(grid) != 4 || grid[0]-grid[3] != 172 {
		t.Fatalf("grid lines at %v, want 4 of them 172 apart", grid)
	}
	y0 := grid[0]
	ypos := func(v float64) float64 { return y0 - (math.Log10(v)+3)/3*172 }
	xpos := func(i int) float64 { return 50 + float64(i)/15*336 }
	if d := dots[4]; math.Abs(d.num(t, "cx")-xpos(4)) > 0.06 || math.Abs(d.num(t, "cy")-ypos(m.Sigma[4])) > 0.06 {
		t.Errorf("σ₅ at (%s, %s), want (%.1f, %.1f)", d.attr("cx"), d.attr("cy"), xpos(4), ypos(m.Sigma[4]))
	}
	var band *node
	for _, p := range root.all("polygon") {
		if p.attr("class") == "c-band" {
			band = p
		}
	}
	if band == nil {
		t.Fatal("no tolerance band")
	}
	pts := strings.Fields(band.attr("points"))
	if len(pts) != 32 {
		t.Fatalf("band of %d points", len(pts))
	}
	up := m.ReportSigma[3]*(1+1.0/64) + 1.0/1024
	xy := strings.Split(pts[3], ",")
	if gy, _ := strconv.ParseFloat(xy[1], 64); math.Abs(gy-ypos(up)) > 0.06 {
		t.Errorf("band's upper edge at σ₄: y %g, want %.1f", gy, ypos(up))
	}
	var cut *node
	for _, l := range root.all("line") {
		if l.attr("class") == "c-cut" {
			cut = l
		}
	}
	if cut == nil || math.Abs(cut.num(t, "y1")-ypos(2e-3)) > 0.06 || !strings.Contains(cut.title(), "numerical rank 15") {
		t.Errorf("rank cut %+v", cut)
	}
	if f := root.texts("c-form"); len(f) != 1 || f[0] != "SVD-form deviation 0.0003 ≤ 0.007812 ✓" {
		t.Errorf("form deviation %q", f)
	}
	// No report: no band, said so.
	m.ReportSigma = nil
	if c := Spectrum("s2", m, tol); strings.Contains(c.SVG, "c-band") || !strings.Contains(c.Caption, "no extraction report") {
		t.Errorf("without a report: %s", c.Caption)
	}
	if Spectrum("s3", &report.AuditMatrix{Module: "x"}, tol) != nil {
		t.Error("a pair without a spectrum got a chart")
	}
}

func adapter() *report.Audit {
	var ms []*report.AuditMatrix
	for _, l := range []int{40, 41, 43} {
		for _, mod := range []string{"mlp.up_proj", "mlp.down_proj", "self_attn.q_proj"} {
			if mod == "self_attn.q_proj" && l != 43 {
				continue
			}
			dev := 1e-4 * float64(l-39)
			r2n := 0.9
			ms = append(ms, &report.AuditMatrix{Module: "model.layers." + strconv.Itoa(l) + "." + mod, Layer: l, Short: mod, Out: 192, In: 64, Rank: 16, Large: true,
				Sigma: []float64{float64(l - 39), 0.1}, FormDev: &dev, ReportR2N: &r2n})
		}
	}
	bad := 1.2
	ms[3].ReportR2N = &bad // layer 41 down_proj, outside 0.85–1.005
	return &report.Audit{Outcome: report.Outcome{Findings: []report.Finding{
		{Code: report.ReportMismatch, Severity: report.Fail, Subject: "model.layers.40.mlp.up_proj", Message: "σ"},
		{Code: report.FactorForm, Severity: report.Warn, Subject: "model.layers.43.self_attn.q_proj", Message: "form"},
	}}, Summary: report.AuditSummary{Tol: &report.AuditTol{Form: 1.0 / 128, ResidualToNoise: &[2]float64{0.85, 1.005}}}, Matrices: ms}
}

func TestPairGrid(t *testing.T) {
	res := adapter()
	root := parse(t, PairGrid("grid", res, Sigma1))
	cells := root.all("g")
	var pairs []string
	for _, g := range cells {
		if p := g.attr("data-pair"); p != "" {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) != 7 {
		t.Fatalf("%d cells with data-pair, want 7 (3 layers × 2 + q_proj on 43)", len(pairs))
	}
	if got := root.texts("c-yt"); !eq(got, []string{"down_proj", "up_proj", "q_proj"}) {
		t.Errorf("rows %v", got)
	}
	if got := root.texts("c-xt"); !eq(got, []string{"40", "41", "43"}) {
		t.Errorf("columns %v", got)
	}
	marks := map[string]string{}
	for _, g := range cells {
		if p := g.attr("data-pair"); p != "" {
			marks[p] = strings.Join(g.texts("c-mk"), "")
			if !strings.Contains(g.title(), p+": σ₁ ") {
				t.Errorf("cell %s hover %q", p, g.title())
			}
		}
	}
	if marks["model.layers.40.mlp.up_proj"] != "×" || marks["model.layers.43.self_attn.q_proj"] != "!" || marks["model.layers.41.mlp.up_proj"] != "" {
		t.Errorf("marks %v", marks)
	}
	// The colour scale: σ₁ from 1 to 4, log, over 1–10.
	// The colours span the values, 1–4: the ticks inside, 1 and 2, and
	// the end, 4.
	if got := root.texts("c-st"); !eq(got, []string{"1", "2", "4"}) {
		t.Errorf("scale ticks %v", got)
	}
	// The largest value's colour is the ramp's end, 2's at log 2 / log 4.
	for _, g := range cells {
		if g.attr("data-pair") == "model.layers.43.mlp.up_proj" {
			want := Sequential[len(Sequential)-1]
			if got := g.all("rect")[0].attr("fill"); got != want {
				t.Errorf("σ₁ = 4 filled %s, want %s", got, want)
			}
		}
		if g.attr("data-pair") == "model.layers.41.mlp.up_proj" {
			if got, want := g.all("rect")[0].attr("fill"), ramp(Sequential, 0.5).String(); got != want {
				t.Errorf("σ₁ = 2 filled %s, want %s", got, want)
			}
		}
	}
	// residual/noise: the claims' band drawn and the cell outside it marked.
	root = parse(t, PairGrid("grid2", res, R2N))
	if !strings.Contains(strings.Join(root.texts("c-tl"), ""), "claimed 0.85–1.005") {
		t.Errorf("no claimed band: %v", root.texts(""))
	}
	for _, g := range root.all("g") {
		if g.attr("data-pair") == "model.layers.41.mlp.down_proj" && (strings.Join(g.texts("c-mk"), "") != "×" || !strings.Contains(g.title(), "1.2 — FAIL")) {
			t.Errorf("residual/noise 1.2 not marked: %q", g.title())
		}
	}
	if kv := Metrics(res); !eq(kv, []string{Sigma1, "σ₁", FormDev, "SVD-form deviation", R2N, "residual / bf16 noise", Params, "parameters"}) {
		t.Errorf("metrics %v", kv)
	}
}

func TestEscapes(t *testing.T) {
	res := adapter()
	evil := `model.layers.40.<script>alert("x")</script>&'`
	res.Matrices[0].Module = evil
	c := PairGrid("g", res, Sigma1)
	root := parse(t, c)
	if strings.Contains(c.SVG, "<script") || strings.Contains(c.HTML(), "<script") {
		t.Error("a module name reached the SVG unescaped")
	}
	found := false
	for _, g := range root.all("g") {
		found = found || g.attr("data-pair") == evil
	}
	if !found {
		t.Error("the escaped module name does not read back")
	}
}

func TestBlock(t *testing.T) {
	b := &report.Block{Module: "m", Out: 64, In: 32, Row0: 8, Col0: 16, Rows: 2, Cols: 3, Scaling: 1,
		Values: []float64{0.5, -1, 0, 0.25, 1, -0.5}, Min: -1, Max: 1, RMS: 0.6}
	root := parse(t, Block("blk", b))
	rects := root.all("rect")
	var cells []*node
	for _, r := range rects {
		if strings.HasPrefix(r.title(), "ΔW[") {
			cells = append(cells, r)
		}
	}
	if len(cells) != 6 || cells[1].title() != "ΔW[8, 17] = -1" || cells[4].title() != "ΔW[9, 17] = 1" {
		t.Fatalf("cells %d, hover %q %q", len(cells), cells[1].title(), cells[4].title())
	}
	if cells[1].attr("fill") != Diverging[0] || cells[4].attr("fill") != Diverging[len(Diverging)-1] || cells[2].attr("fill") != "#ffffff" {
		t.Errorf("fills −1 %s, 1 %s, 0 %s", cells[1].attr("fill"), cells[4].attr("fill"), cells[2].attr("fill"))
	}
	if got := root.texts("c-xt"); !eq(got, []string{"16", "17", "18"}) {
		t.Errorf("column indices %v", got)
	}
	if got := root.texts("c-st"); !eq(got, []string{"-1.0", "-0.5", "0.0", "0.5", "1.0"}) {
		t.Errorf("scale %v", got)
	}
}

func TestDrift(t *testing.T) {
	tol := report.DefaultHidden
	ls := []report.LayerStats{{Layer: 40, RelL2: 1e-3, Cosine: 0.99999, OK: true}, {Layer: 41, RelL2: 0.05, Cosine: 0.998}}
	root := parse(t, Drift("drift", ls, tol, "", true))
	var bars []*node
	for _, r := range root.all("rect") {
		if r.attr("class") == "c-bar" {
			bars = append(bars, r)
		}
	}
	if len(bars) != 4 || !strings.HasPrefix(bars[1].title(), "layer 41: rel. L2 0.05") || !strings.HasSuffix(bars[1].title(), "beyond tolerance") || bars[0].attr("fill") != Blue {
		t.Fatalf("bars %d: %q", len(bars), bars[1].title())
	}
	if got := root.texts("c-tl"); !eq(got, []string{"tolerance 0.016", "tolerance cos ≥ 0.999"}) {
		t.Errorf("tolerance labels %v", got)
	}
	if got := root.texts("c-ya"); !eq(got, []string{"worst rel. L2", "worst 1 − cos"}) {
		t.Errorf("axis titles %v", got)
	}
	if n := len(root.texts("c-mk")); n != 2 {
		t.Errorf("%d × marks, want 2 (layer 41 on both)", n)
	}
}

func TestLatency(t *testing.T) {
	var rows []report.DecisionRow
	for _, ms := range []float64{12, 15, 18, 22, 25, 31, 33, 40, 52, 90} {
		rows = append(rows, report.DecisionRow{Status: report.Answered, LatencyMS: ms})
	}
	rows = append(rows, report.DecisionRow{Status: report.Failed, LatencyMS: 999})
	root := parse(t, Latency("lat", rows))
	n := 0
	for _, r := range root.all("rect") {
		if r.attr("class") == "c-bar" {
			f := strings.Fields(r.title())
			c, _ := strconv.Atoi(f[len(f)-2])
			n += c
		}
	}
	if n != 10 {
		t.Errorf("the bins count %d decisions, want 10", n)
	}
	// Nearest rank: p50 the 5th (25 ms), p90 the 9th (52 ms).
	var q []string
	for _, l := range root.all("line") {
		if l.attr("class") == "c-q" {
			q = append(q, l.title())
		}
	}
	if !eq(q, []string{"p50 25 ms", "p90 52 ms"}) {
		t.Errorf("quantile lines %v", q)
	}
	if got := root.texts("c-xa"); !eq(got, []string{"latency (ms)"}) {
		t.Errorf("x title %v", got)
	}
	if got := root.texts("c-yt"); len(got) < 2 || got[0] != "0" {
		t.Errorf("count ticks %v", got)
	}
}

func TestAgreement(t *testing.T) {
	var rows []report.DecisionRow
	for i := 0; i < 4; i++ {
		rows = append(rows, report.DecisionRow{Dataset: "arc", Status: report.Answered, Choice: "A", Reference: "A"})
	}
	rows = append(rows, report.DecisionRow{Dataset: "banking", Status: report.Answered, Choice: "B", Reference: "A"},
		report.DecisionRow{Dataset: "banking", Status: report.Answered, Choice: "A", Reference: "A"},
		report.DecisionRow{Dataset: "banking", Status: report.Failed})
	root := parse(t, Agreement("agr", rows))
	if got := root.texts("c-n"); !eq(got, []string{"4/4", "1/2 ✗"}) {
		t.Errorf("counts %v", got)
	}
	if got := root.texts("c-xt"); !eq(got, []string{"0", "20", "40", "60", "80", "100"}) {
		t.Errorf("ticks %v", got)
	}
}

func TestContrast(t *testing.T) {
	for _, ink := range []string{Blue, Orange, Red, Green, Purple, Grey, "#1f2328"} {
		if c := Contrast(ink, "#ffffff"); c < 4.5 {
			t.Errorf("%s on white: %.2f < 4.5", ink, c)
		}
	}
	if c := Contrast("#000000", "#ffffff"); math.Abs(c-21) > 1e-9 {
		t.Errorf("black on white %.3f", c)
	}
	// The marks on heatmap cells stay readable on every fill.
	for i := 0; i <= 100; i++ {
		for _, st := range [][]string{Sequential, Diverging} {
			f := ramp(st, float64(i)/100)
			if c := Contrast(inkOn(f), f.String()); c < 4.5 {
				t.Errorf("mark on %s: %.2f", f, c)
			}
		}
	}
}

// TestWriteSamples writes every chart to $CHART_SAMPLES/charts.html, to be
// looked at in a browser.
func TestWriteSamples(t *testing.T) {
	dir := os.Getenv("CHART_SAMPLES")
	if dir == "" {
		t.Skip("CHART_SAMPLES not set")
	}
	m, tol := pair()
	var rows []report.DecisionRow
	for i := 0; i < 60; i++ {
		rows = append(rows, report.DecisionRow{Dataset: []string{"arc-challenge", "banking77"}[i%2], Status: report.Answered, LatencyMS: 150 + 30*math.Sin(float64(i)), Choice: "A", Reference: []string{"A", "B"}[min(1, i%7)]})
	}
	var ls []report.LayerStats
	for l := 40; l < 64; l++ {
		ls = append(ls, report.LayerStats{Layer: l, RelL2: 1e-3 * float64(l-38), Cosine: 1 - 1e-5*float64(l-38)*float64(l-38), OK: l < 60})
	}
	blk := &report.Block{Module: "model.layers.40.mlp.gate_proj", Out: 192, In: 64, Rows: 16, Cols: 16, Scaling: 1}
	for i := 0; i < 256; i++ {
		blk.Values = append(blk.Values, math.Sin(float64(i)/7)*0.01)
	}
	blk.Min, blk.Max = -0.01, 0.01
	html := `<!doctype html><meta charset="utf-8"><style>body{font-family:system-ui;max-width:720px}figure.chart{max-width:520px}figure.chart svg{width:100%;height:auto}</style>`
	for _, c := range []*Chart{Spectrum("a", m, tol), PairGrid("b", adapter(), Sigma1), PairGrid("c", adapter(), R2N), Block("d", blk), Drift("e", ls, report.DefaultHidden, "", true), Latency("f", rows), Agreement("g", rows)} {
		html += c.HTML()
	}
	if err := os.WriteFile(filepath.Join(dir, "charts.html"), []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
}

// luminance is WCAG's relative luminance; Contrast its contrast ratio of
// two colours (#rrggbb).
func luminance(c rgb) float64 {
	var l [3]float64
	for i, v := range c {
		v /= 255
		if v <= 0.03928 {
			l[i] = v / 12.92
		} else {
			l[i] = math.Pow((v+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}

func Contrast(a, b string) float64 {
	la, lb := luminance(hex(a)), luminance(hex(b))
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// TestScaleLabelsApart: the colour scale labels its ends only where they
// leave room: σ₁ from 0.04945 to 1.425 gets 0.04945, 10⁻¹ and 1, not 1.425
// over 1.
func TestScaleLabelsApart(t *testing.T) {
	res := adapter()
	for i, m := range res.Matrices {
		m.Sigma = []float64{0.04945 + (1.425-0.04945)*float64(i)/float64(len(res.Matrices)-1)}
	}
	root := parse(t, PairGrid("g", res, Sigma1))
	got := root.texts("c-st")
	if !eq(got, []string{"0.04945", "10⁻¹", "1"}) {
		t.Errorf("scale labels %v", got)
	}
	var prev float64 = -1
	for _, tx := range root.all("text") {
		if !strings.Contains(tx.attr("class"), "c-st") {
			continue
		}
		lo, hi, _ := extent(tx.num(t, "x"), tx.Text, 400)
		if a := tx.attr("text-anchor"); a == "start" {
			lo, hi = tx.num(t, "x"), tx.num(t, "x")+hi-lo
		} else if a == "end" {
			lo, hi = tx.num(t, "x")-(hi-lo), tx.num(t, "x")
		}
		if lo < prev {
			t.Errorf("label %q starts at %.1f, before the last one ends (%.1f)", tx.Text, lo, prev)
		}
		prev = hi
	}
}
