package chart

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// The adapter heatmap's metrics.
const (
	Sigma1  = "sigma1" // σ₁ of s·B·A
	FormDev = "form"   // the SVD-form deviation, against its tolerance
	ReportD = "report" // the largest |σᵢ − σᵢ,report| / tolerance
	R2N     = "r2n"    // residual / bf16 noise (the rebuild's, else the report's), against the claims' band
	Params  = "params" // parameters of the pair (quick audits: no spectra)
)

// Metrics are the metrics a result can draw, as value, label pairs.
func Metrics(res *report.Audit) []string {
	var kv []string
	has := func(f func(*report.AuditMatrix) bool) bool {
		for _, m := range res.Matrices {
			if f(m) {
				return true
			}
		}
		return false
	}
	if has(func(m *report.AuditMatrix) bool { return len(m.Sigma) > 0 }) {
		kv = append(kv, Sigma1, "σ₁", FormDev, "SVD-form deviation")
	}
	if has(func(m *report.AuditMatrix) bool { return m.ReportSV != nil }) {
		kv = append(kv, ReportD, "σ against the report (÷ tolerance)")
	}
	if res.Rebuild != nil || has(func(m *report.AuditMatrix) bool { return m.ReportR2N != nil }) {
		kv = append(kv, R2N, "residual / bf16 noise")
	}
	return append(kv, Params, "parameters")
}

// shortName is a module's last component when that is unique among the
// modules, else the whole short name.
func shortNames(mods []string) map[string]string {
	last := map[string]int{}
	for _, m := range mods {
		last[m[strings.LastIndex(m, ".")+1:]]++
	}
	out := map[string]string{}
	for _, m := range mods {
		l := m[strings.LastIndex(m, ".")+1:]
		if last[l] == 1 {
			out[m] = l
		} else {
			out[m] = m
		}
	}
	return out
}

type cell struct {
	m     *report.AuditMatrix
	v     float64
	ok    bool // v measured
	fail  bool
	warn  bool
	about string
}

// PairGrid draws the whole adapter at a glance: a modules × layers
// heatmap of one metric, cells beyond their bound or with a failing
// finding marked × (a warning !), a colour scale with its ticks, and on
// every cell its data-pair (the module) and its values as hover text.
func PairGrid(id string, res *report.Audit, metric string) *Chart {
	mods, layers := map[string]bool{}, map[int]bool{}
	for _, m := range res.Matrices {
		if m.Layer >= 0 {
			mods[m.Short], layers[m.Layer] = true, true
		}
	}
	if len(layers) == 0 {
		return nil
	}
	var rows []string
	for m := range mods {
		rows = append(rows, m)
	}
	sort.Strings(rows)
	var cols []int
	for l := range layers {
		cols = append(cols, l)
	}
	sort.Ints(cols)
	sev := map[string]report.Severity{}
	for _, f := range res.Findings {
		for _, m := range res.Matrices {
			if f.Subject == m.Module || strings.HasPrefix(f.Subject, m.Module+".") || strings.HasPrefix(f.Subject, "base_model.model."+m.Module+".") {
				if f.Severity == report.Fail || (f.Severity == report.Warn && sev[m.Module] != report.Fail) {
					sev[m.Module] = f.Severity
				}
			}
		}
	}
	r2n := map[string]float64{}
	if res.Rebuild != nil {
		for _, x := range res.Rebuild.Matrices {
			r2n[x.Module] = x.ResidualToNoise
		}
	}
	tol := res.Summary.Tol
	var band *[2]float64
	if tol != nil {
		band = tol.ResidualToNoise
	}
	name, unit, logScale := "σ₁", "", true
	get := func(m *report.AuditMatrix) (float64, bool, bool) { // value, measured, beyond its bound
		switch metric {
		case FormDev:
			if m.FormDev == nil {
				return 0, false, false
			}
			return *m.FormDev, true, tol != nil && *m.FormDev > tol.Form
		case ReportD:
			if m.ReportSV == nil {
				return 0, false, false
			}
			return *m.ReportSV, true, *m.ReportSV > 1
		case R2N:
			v, ok := r2n[m.Module]
			if !ok && m.ReportR2N != nil {
				v, ok = *m.ReportR2N, true
			}
			return v, ok, ok && band != nil && m.Large && (v < band[0] || v > band[1])
		case Params:
			return float64(m.Params), true, false
		}
		if len(m.Sigma) == 0 {
			return 0, false, false
		}
		return m.Sigma[0], m.Sigma[0] > 0, false
	}
	switch metric {
	case FormDev:
		name = "SVD-form deviation"
	case ReportD:
		name, logScale = "largest |σᵢ − σᵢ,report| ÷ tolerance", false
	case R2N:
		name, logScale = "residual ÷ bf16 noise", false
	case Params:
		name, unit = "parameters", ""
	}
	grid := map[string]map[int]*cell{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range res.Matrices {
		if m.Layer < 0 {
			continue
		}
		v, ok, beyond := get(m)
		c := &cell{m: m, v: v, ok: ok && !math.IsNaN(v) && (!logScale || v > 0), fail: beyond || sev[m.Module] == report.Fail, warn: sev[m.Module] == report.Warn}
		if grid[m.Short] == nil {
			grid[m.Short] = map[int]*cell{}
		}
		grid[m.Short][m.Layer] = c
		if c.ok {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if metric == ReportD && hi < math.Inf(-1) {
		lo, hi = 0, math.Max(hi, 1)
	}
	if metric == R2N && band != nil && hi > math.Inf(-1) {
		lo, hi = math.Min(lo, band[0]), math.Max(hi, band[1])
	}
	if metric == FormDev && tol != nil && hi > math.Inf(-1) {
		hi = math.Max(hi, tol.Form)
	}
	short := shortNames(rows)
	labelW := 0
	for _, r := range rows {
		labelW = max(labelW, len([]rune(short[r])))
	}
	const w = 400.0
	l := math.Min(8+6.8*float64(labelW), 170)
	cw := (w - 10 - l) / float64(len(cols))
	ch := math.Max(12, math.Min(cw, 22))
	top := 30.0
	h := top + ch*float64(len(rows)) + 100
	c := &canvas{id: id, w: w}
	// The layer indices above the columns (every k-th when narrow).
	every := int(math.Ceil(22 / cw))
	for j, layer := range cols {
		if j%every == 0 || j == len(cols)-1 && every == 1 {
			c.text(l+(float64(j)+0.5)*cw, top-6, "middle", "c-m c-xt", strconv.Itoa(layer))
		}
	}
	c.text(l+(w-10-l)/2, 11, "middle", "c-xa", "layer")
	var ax axis
	have := hi > math.Inf(-1)
	if have {
		if logScale {
			ax = logAxis(lo, hi, l, w-10, 6, "")
		} else {
			ax = linAxis(lo, hi, l, w-10, 5, "")
		}
		exact(&ax, lo, hi, w)
	}
	nfail, nwarn, n := 0, 0, 0
	for i, r := range rows {
		y := top + float64(i)*ch
		c.text(l-5, y+ch/2+3.5, "end", "c-yt", short[r], "font-family", "ui-monospace,monospace")
		for j, layer := range cols {
			x := l + float64(j)*cw
			cl := grid[r][layer]
			if cl == nil {
				continue
			}
			n++
			fill := "#ffffff"
			hover := cl.m.Module + ": " + name + " "
			if cl.ok && have {
				t := (ax.s.Pos(cl.v) - ax.s.A) / (ax.s.B - ax.s.A)
				fill = ramp(Sequential, t).String()
				hover += Num(cl.v) + unit
			} else {
				hover += "not measured"
			}
			mark := ""
			switch {
			case cl.fail:
				mark, hover = "×", hover+" — FAIL"
				nfail++
			case cl.warn:
				mark, hover = "!", hover+" — WARN"
				nwarn++
			}
			if cl.m.FormDev != nil && metric != FormDev {
				hover += "; form deviation " + Num(*cl.m.FormDev)
			}
			c.open("g", "data-pair", cl.m.Module, "class", "c-cell")
			c.b.WriteString("><title>" + esc(hover+" (click to open the pair)") + "</title>")
			if cl.ok {
				c.el("rect", "", "x", x+0.5, "y", y+0.5, "width", cw-1, "height", ch-1, "fill", fill)
			} else {
				c.el("rect", "", "x", x+0.5, "y", y+0.5, "width", cw-1, "height", ch-1, "fill", "#ffffff", "stroke", "#afb8c1", "stroke-dasharray", "2 2")
			}
			if mark != "" {
				c.el("rect", "", "x", x+1, "y", y+1, "width", cw-2, "height", ch-2, "fill", "none", "stroke", Red, "stroke-width", 1.5)
				c.text(x+cw/2, y+ch/2+4, "middle", "c-mk", mark, "fill", inkOn(hex(fill)))
			}
			c.raw("</g>")
		}
	}
	y := top + ch*float64(len(rows)) + 26
	if have {
		colorBar(c, Sequential, ax, y, 10, name+map[bool]string{true: " (log scale)", false: ""}[logScale])
		if metric == R2N && band != nil {
			a, b := ax.s.Pos(band[0]), ax.s.Pos(band[1])
			c.el("rect", "the claims' band "+Num(band[0])+"–"+Num(band[1]), "x", a, "y", y-2, "width", b-a, "height", 14.0, "fill", "none", "stroke", Orange, "stroke-width", 1.5)
			c.text(clampX((a+b)/2, l, w), y+37, "middle", "c-tl", "claimed "+Num(band[0])+"–"+Num(band[1]))
		}
		if metric == FormDev && tol != nil {
			x := ax.s.Pos(tol.Form)
			c.line(x, y-3, x, y+13, "c-tol", "tolerance "+Num(tol.Form))
			c.text(clampX(x, l, w), y+37, "middle", "c-tl", "tolerance "+Num(tol.Form))
		}
		if metric == ReportD {
			x := ax.s.Pos(1)
			c.line(x, y-3, x, y+13, "c-tol", "1 = the tolerance")
			c.text(clampX(x, l, w), y+37, "middle", "c-tl", "1 = the tolerance")
		}
	}
	legend(c, l, h-10, w-8, []entry{{"mark", "×", "fails"}, {"mark", "!", "warns"}, {"none", "", "not measured"}})
	title := "The adapter's pairs: " + name + " by module and layer"
	caption := fmt.Sprintf("%s of each of the %d pairs, modules (rows) × layers %d–%d (columns)", name, n, cols[0], cols[len(cols)-1])
	if nfail+nwarn > 0 {
		caption += fmt.Sprintf("; %d failing (×), %d warning (!)", nfail, nwarn)
	} else {
		caption += "; none failing"
	}
	caption += "; blank: no such pair. Click a cell to open its pair."
	return &Chart{ID: id, Title: title, Caption: caption, SVG: c.finish(w, h, title, caption)}
}

// Block draws a block of s·B·A: a diverging colour per value (blue
// negative, white zero, red positive) scaled to the largest magnitude,
// the row and column indices of ΔW, a colour scale, and each cell's value
// as its hover text.
func Block(id string, b *report.Block) *Chart {
	if b == nil || b.Rows == 0 || b.Cols == 0 || len(b.Values) < b.Rows*b.Cols {
		return nil
	}
	top := math.Max(math.Abs(b.Min), math.Abs(b.Max))
	if top == 0 || math.IsNaN(top) || math.IsInf(top, 0) {
		top = 1
	}
	const w = 400.0
	l, t := 44.0, 30.0
	cs := math.Min(24, (w-l-10)/float64(b.Cols))
	gh := cs * float64(b.Rows)
	h := t + gh + 56
	c := &canvas{id: id, w: w}
	every := int(math.Ceil(22 / cs))
	for j := 0; j < b.Cols; j += every {
		c.text(l+(float64(j)+0.5)*cs, t-5, "middle", "c-m c-xt", strconv.Itoa(b.Col0+j))
	}
	c.text(l, 11, "start", "c-xa", "column (input) index")
	for i := 0; i < b.Rows; i += max(1, int(math.Ceil(13/cs))) {
		c.text(l-4, t+(float64(i)+0.5)*cs+3.5, "end", "c-m c-yt", strconv.Itoa(b.Row0+i))
	}
	c.text(10, t+gh/2, "middle", "c-ya", "row (output)", "transform", "rotate(-90 10 "+px(t+gh/2)+")")
	for i := 0; i < b.Rows; i++ {
		for j := 0; j < b.Cols; j++ {
			v := b.Values[i*b.Cols+j]
			fill := ramp(Diverging, 0.5+v/top/2).String()
			c.el("rect", "ΔW["+strconv.Itoa(b.Row0+i)+", "+strconv.Itoa(b.Col0+j)+"] = "+strconv.FormatFloat(v, 'g', 5, 64),
				"x", l+float64(j)*cs, "y", t+float64(i)*cs, "width", cs, "height", cs, "fill", fill)
		}
	}
	ax := linAxis(-top, top, l, w-10, 4, "")
	ax.s.Lo, ax.s.Hi = -top, top
	var ts []float64
	var ls []string
	for k, x := range ax.ticks {
		if x >= -top-1e-12 && x <= top+1e-12 {
			ts, ls = append(ts, x), append(ls, ax.labels[k])
		}
	}
	ax.ticks, ax.labels = ts, ls
	colorBar(c, Diverging, ax, t+gh+22, 10, "value of s·B·A (blue < 0 < red)")
	title := fmt.Sprintf("ΔW = s·B·A of %s, rows %d–%d, columns %d–%d", b.Module, b.Row0, b.Row0+b.Rows-1, b.Col0, b.Col0+b.Cols-1)
	caption := fmt.Sprintf("%d × %d block of ΔW = s·B·A (s = %g) of %s (%d × %d): colour by value, white = 0, scaled to ±%s; min %s, max %s, rms %s.",
		b.Rows, b.Cols, b.Scaling, b.Module, b.Out, b.In, Num(top), Num(b.Min), Num(b.Max), Num(b.RMS))
	return &Chart{ID: id, Title: title, Caption: caption, SVG: c.finish(w, h, title, caption)}
}

// clampX keeps a label centred at x inside [l+50, w−60].
func clampX(x, l, w float64) float64 { return math.Max(l+50, math.Min(w-60, x)) }

// exact narrows a colour scale to the data's range [lo, hi] (the colours
// then span the values, not the widened axis), keeping the ticks inside
// it and labelling its ends where their labels leave room (w: the chart's
// width).
func exact(ax *axis, lo, hi, w float64) {
	if hi <= lo {
		return
	}
	ax.s.Lo, ax.s.Hi = lo, hi
	var ts []float64
	var ls []string
	for i, t := range ax.ticks {
		if t >= lo*(1-1e-9) && t <= hi*(1+1e-9) || t == 0 && lo <= 0 && hi >= 0 {
			ts, ls = append(ts, t), append(ls, ax.labels[i])
		}
	}
	room := func(a float64, la string, b float64, lb string) bool { // a's label left of b's, 6 px apart
		_, ahi, _ := extent(ax.s.Pos(a), la, w)
		blo, _, _ := extent(ax.s.Pos(b), lb, w)
		return blo-ahi >= 6
	}
	if len(ts) == 0 || room(lo, Num(lo), ts[0], ls[0]) {
		ts, ls = append([]float64{lo}, ts...), append([]string{Num(lo)}, ls...)
	}
	if n := len(ts); room(ts[n-1], ls[n-1], hi, Num(hi)) && ts[n-1] != hi {
		ts, ls = append(ts, hi), append(ls, Num(hi))
	}
	ax.ticks, ax.labels = ts, ls
}
