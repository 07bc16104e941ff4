package chart

import (
	"fmt"
	"math"
	"strconv"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Spectrum draws one pair's singular values σᵢ of s·B·A on a log axis
// against their index: the measured ones (a line with a dot per value),
// the extraction report's (dashed) with the tolerance band around them,
// the numerical-rank cut (σ below it count as zero) and the SVD-form
// deviation against its tolerance. nil when the pair has no spectrum.
func Spectrum(id string, m *report.AuditMatrix, tol *report.AuditTol) *Chart {
	var xs []int
	lo, hi := math.Inf(1), 0.0
	for i, v := range m.Sigma {
		if v > 0 {
			xs = append(xs, i)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	ref := m.ReportSigma
	band := tol != nil && len(ref) > 0 && ref[0] > 0
	allowed := func(j int) float64 { return tol.SigmaRel*math.Abs(ref[j]) + tol.SigmaAbs*math.Abs(ref[0]) }
	for _, v := range ref {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v) // the band below is clipped at the axis
		}
	}
	if m.RankTol > 0 {
		lo = math.Min(lo, m.RankTol)
	}
	const w = 400.0
	n := len(m.Sigma)
	c := &canvas{id: id, w: w}
	title := "Spectrum of " + m.Module
	es := []entry{{"line", Blue, "measured σᵢ (" + methodName(m) + ")"}}
	if len(ref) > 0 {
		es = append(es, entry{"ring", Orange, "extraction report σᵢ"})
	}
	if band {
		es = append(es, entry{"band", Band, "tolerance ±(" + pct(tol.SigmaRel) + " + " + Num(tol.SigmaAbs) + "·σ₁)"})
	}
	if m.RankTol > 0 {
		es = append(es, entry{"dash", Purple, "rank cut"})
	}
	top := legend(c, 50, 14, w-8, es) + 16
	f := frame{w: w, l: 50, r: w - 14, t: top, b: top + 172}
	h := f.b + 58
	f.x = linAxis(1, float64(max(n, 2)), f.l, f.r, 6, "index i (of r = "+strconv.Itoa(m.Rank)+")")
	f.x.s.Lo, f.x.s.Hi = 1, float64(max(n, 2)) // the indices, not widened
	f.x.ticks, f.x.labels = intTicks(f.x.ticks, f.x.labels, 1, max(n, 2))
	f.y = logAxis(lo, hi, f.b, f.t, 8, "σᵢ of s·B·A")
	f.axes(c)
	px := func(i int) float64 { return f.x.s.Pos(float64(i + 1)) }
	if band {
		var bx, by []float64
		for j := range ref {
			bx, by = append(bx, px(j)), append(by, f.y.s.Pos(ref[j]+allowed(j)))
		}
		for j := len(ref) - 1; j >= 0; j-- {
			bx, by = append(bx, px(j)), append(by, f.y.s.Pos(ref[j]-allowed(j)))
		}
		c.el("polygon", "tolerance band around the report's σᵢ", "points", points(bx, by), "fill", Band, "fill-opacity", "0.3", "class", "c-band")
	}
	if len(ref) > 0 {
		var rx, ry []float64
		for j, v := range ref {
			if v > 0 {
				rx, ry = append(rx, px(j)), append(ry, f.y.s.Pos(v))
			}
		}
		c.el("polyline", fmt.Sprintf("extraction report: %d singular values, σ₁ = %s", len(ref), Num(ref[0])), "points", points(rx, ry), "fill", "none", "stroke", Orange, "stroke-width", 1, "stroke-dasharray", "3 3", "class", "c-report")
		c.raw(`<g class="c-rings">`)
		for k := range rx {
			c.el("circle", "report σ"+strconv.Itoa(k+1)+" = "+Num(ref[k]), "cx", rx[k], "cy", ry[k], "r", 4.5, "fill", "none", "stroke", Orange, "stroke-width", 1.2, "class", "c-ring")
		}
		c.raw(`</g>`)
	}
	if m.RankTol > 0 {
		y := f.y.s.Pos(m.RankTol)
		c.line(f.l, y, f.r, y, "c-cut", fmt.Sprintf("numerical-rank cut %s: σ below it count as zero (numerical rank %d)", Num(m.RankTol), m.NumRank))
		c.text(f.r-2, y-4, "end", "c-cl", "rank cut "+Num(m.RankTol))
	}
	var mx, my []float64
	for _, i := range xs {
		mx, my = append(mx, px(i)), append(my, f.y.s.Pos(m.Sigma[i]))
	}
	c.el("polyline", "", "points", points(mx, my), "fill", "none", "stroke", Blue, "stroke-width", 1.5)
	bad := 0
	c.raw(`<g class="c-marks">`)
	for k, i := range xs {
		t := "σ" + strconv.Itoa(i+1) + " = " + Num(m.Sigma[i])
		out := false
		if i < len(ref) {
			t += ", report " + Num(ref[i])
			if band {
				d := math.Abs(m.Sigma[i]-ref[i]) / allowed(i)
				t += " (off by " + Num(d) + "× the tolerance)"
				out = d > 1
			}
		}
		if m.RankTol > 0 && m.Sigma[i] < m.RankTol {
			t += ", below the rank cut"
		}
		if out {
			bad++
			t = "beyond tolerance: " + t
			c.text(mx[k], my[k]+4, "middle", "c-mk c-bad", "×", "fill", Red)
		}
		c.el("circle", t, "cx", mx[k], "cy", my[k], "r", 2.2, "fill", dotColor(out), "class", "c-dot")
	}
	c.raw(`</g>`)
	if m.FormDev != nil && tol != nil {
		ok := *m.FormDev <= tol.Form
		s := "SVD-form deviation " + Num(*m.FormDev) + " ≤ " + Num(tol.Form) + " ✓"
		if !ok {
			s = "SVD-form deviation " + Num(*m.FormDev) + " > " + Num(tol.Form) + " ✗ (not A = √S·Vᵀ, B = U·√S)"
		}
		c.text(f.l, h-8, "start", "c-form", s, "fill", map[bool]string{true: Green, false: Red}[ok])
	}
	caption := fmt.Sprintf("Singular values σᵢ of s·B·A for %s (%d × %d, r = %d), log scale; numerical rank %d", m.Module, m.Out, m.In, m.Rank, m.NumRank)
	if m.RankTol > 0 {
		caption += " (σ below the rank cut " + Num(m.RankTol) + " count as zero)"
	}
	switch {
	case band && bad > 0:
		caption += fmt.Sprintf("; %d of %d beyond the report's tolerance band (marked ×)", bad, min(len(ref), n))
	case band:
		caption += "; every σᵢ within the report's tolerance band"
	case len(ref) == 0:
		caption += "; no extraction report lists this module"
	}
	if m.FormDev != nil {
		caption += "; SVD-form deviation " + Num(*m.FormDev)
		if tol != nil {
			caption += " (tolerance " + Num(tol.Form) + ")"
		}
	}
	caption += "."
	return &Chart{ID: id, Title: title, Caption: caption, SVG: c.finish(w, h, title, caption)}
}

func dotColor(bad bool) string {
	if bad {
		return Red
	}
	return Blue
}

func methodName(m *report.AuditMatrix) string {
	if m.Method == "probes" && m.SigmaBound != nil {
		return "probes, ±" + pct(*m.SigmaBound)
	}
	if m.Method == "gram" {
		return "exact Gram"
	}
	return m.Method
}

func pct(v float64) string { return Num(100*v) + "%" }

// intTicks keeps the integer ticks within [lo, hi] (an index axis).
func intTicks(ts []float64, ls []string, lo, hi int) ([]float64, []string) {
	var t2 []float64
	var l2 []string
	for i, t := range ts {
		if t >= float64(lo) && t <= float64(hi) && t == math.Trunc(t) {
			t2, l2 = append(t2, t), append(l2, ls[i])
		}
	}
	if len(t2) == 0 || t2[0] != float64(lo) {
		t2, l2 = append([]float64{float64(lo)}, t2...), append([]string{strconv.Itoa(lo)}, l2...)
	}
	return t2, l2
}
