package chart

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Drift draws, per captured layer, the worst relative L2 error and the
// worst 1 − cosine (log axes: both are small) against their tolerances,
// drawn as labelled lines; bars beyond tolerance are red and marked ×.
// what names the records (worst: the figures are the worst over them) or
// the record.
func Drift(id string, ls []report.LayerStats, tol report.HiddenTol, what string, worst bool) *Chart {
	if len(ls) == 0 {
		return nil
	}
	const w, ph = 400.0, 150.0
	h := 2*ph + 40
	c := &canvas{id: id, w: w}
	legend(c, 50, 14, w-8, []entry{{"box", Blue, "within tolerance"}, {"box", Red, "beyond (×)"}, {"dash", Orange, "tolerance"}})
	rel := make([]float64, len(ls))
	cos := make([]float64, len(ls))
	for i, l := range ls {
		rel[i], cos[i] = l.RelL2, 1-l.Cosine
	}
	nbad := 0
	for _, l := range ls {
		if !l.OK {
			nbad++
		}
	}
	panel := func(top float64, vals []float64, limit float64, ytitle, tl string, hover func(int) string, beyond func(int) bool) {
		f := frame{w: w, h: h, l: 50, r: w - 14, t: top, b: top + ph - 44}
		lo, hi := limit, limit
		for _, v := range vals {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		f.y = logAxis(lo, hi, f.b, f.t, 5, ytitle)
		f.x = axis{s: Scale{Lo: 0, Hi: float64(len(ls)), A: f.l, B: f.r}, title: "layer"}
		every := int(math.Ceil(24 / ((f.r - f.l) / float64(len(ls)))))
		for i, l := range ls {
			if i%every == 0 {
				f.x.ticks, f.x.labels = append(f.x.ticks, float64(i)+0.5), append(f.x.labels, strconv.Itoa(l.Layer))
			}
		}
		f.axes(c)
		bw := (f.r - f.l) / float64(len(ls))
		for i, v := range vals {
			x := f.l + float64(i)*bw
			y := f.y.s.Pos(v)
			bad := beyond(i)
			col := Blue
			t := hover(i)
			if bad {
				col, t = Red, t+" — beyond tolerance"
			}
			c.el("rect", t, "x", x+bw*0.15, "y", y, "width", bw*0.7, "height", math.Max(0.5, f.b-y), "fill", col, "class", "c-bar")
			if bad {
				c.text(x+bw/2, y-3, "middle", "c-mk", "×", "fill", Red)
			}
		}
		ty := f.y.s.Pos(limit)
		c.line(f.l, ty, f.r, ty, "c-tol", tl)
		c.text(f.r, f.t-5, "end", "c-tl", tl)
	}
	hov := func(i int) string {
		l := ls[i]
		return fmt.Sprintf("layer %d: rel. L2 %s, cosine %.6f (1 − cos %s)", l.Layer, Num(l.RelL2), l.Cosine, Num(1-l.Cosine))
	}
	pre, wc := "", ""
	if worst {
		pre, wc = "worst ", " worst"
	}
	panel(30, rel, tol.MaxRelL2, pre+"rel. L2", "tolerance "+Num(tol.MaxRelL2), hov, func(i int) bool { return ls[i].RelL2 > tol.MaxRelL2 })
	panel(30+ph+10, cos, 1-tol.MinCosine, pre+"1 − cos", "tolerance cos ≥ "+strconv.FormatFloat(tol.MinCosine, 'f', -1, 64), hov, func(i int) bool { return ls[i].Cosine < tol.MinCosine })
	title := "Hidden-state drift per layer" + what
	caption := fmt.Sprintf("Per captured layer (%d–%d), the%s relative L2 error (top) and the%s 1 − cosine (bottom)%s against the reference, log scales; dashed: the tolerances (rel. L2 ≤ %s, cosine ≥ %s)",
		ls[0].Layer, ls[len(ls)-1].Layer, wc, wc, what, Num(tol.MaxRelL2), strconv.FormatFloat(tol.MinCosine, 'f', -1, 64))
	if nbad > 0 {
		caption += fmt.Sprintf("; %d layers beyond them (red, ×).", nbad)
	} else {
		caption += "; every layer within them."
	}
	return &Chart{ID: id, Title: title, Caption: caption, SVG: c.finish(w, h, title, caption)}
}

// Percentile is the nearest-rank p-quantile of sorted xs (p in (0, 1]).
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}

// Latency draws the answered decisions' latencies as a histogram (bins of
// a nice width in ms, counts on the y axis) with the p50 and p90 marked.
func Latency(id string, rows []report.DecisionRow) *Chart {
	var ms []float64
	for _, r := range rows {
		if r.Status == report.Answered && r.LatencyMS >= 0 && !math.IsInf(r.LatencyMS, 0) && !math.IsNaN(r.LatencyMS) {
			ms = append(ms, r.LatencyMS)
		}
	}
	if len(ms) < 2 {
		return nil
	}
	sort.Float64s(ms)
	p50, p90 := Percentile(ms, 0.5), Percentile(ms, 0.9)
	const w, h = 400.0, 238.0
	f := frame{w: w, h: h, l: 46, r: w - 14, t: 58, b: h - 40}
	// Bins: a nice width giving about 16 of them over the range.
	_, _, _, bw := LinearTicks(ms[0], ms[len(ms)-1], 16)
	b0 := math.Floor(ms[0]/bw) * bw
	nb := max(1, int(math.Floor((ms[len(ms)-1]-b0)/bw))+1)
	counts := make([]int, nb)
	for _, v := range ms {
		counts[min(nb-1, int(math.Floor((v-b0)/bw+1e-9)))]++
	}
	top := 1
	for _, n := range counts {
		top = max(top, n)
	}
	f.x = linAxis(b0, b0+float64(nb)*bw, f.l, f.r, 6, "latency (ms)")
	f.y = linAxis(0, float64(top), f.b, f.t, min(top, 5), "decisions")
	f.y.ticks, f.y.labels = intTicks(f.y.ticks, f.y.labels, 0, int(f.y.s.Hi))
	c := &canvas{id: id, w: w}
	legend(c, f.l, 14, w-8, []entry{{"box", Blue, "decisions per bin"}, {"dash", Orange, "p50"}, {"dash", Red, "p90"}})
	f.axes(c)
	for i, n := range counts {
		if n == 0 {
			continue
		}
		a, b := b0+float64(i)*bw, b0+float64(i+1)*bw
		x0, x1 := f.x.s.Pos(a), f.x.s.Pos(b)
		y := f.y.s.Pos(float64(n))
		c.el("rect", fmt.Sprintf("%s–%s ms: %d decisions", Num(a), Num(b), n), "x", x0+0.5, "y", y, "width", math.Max(0.5, x1-x0-1), "height", f.b-y, "fill", Blue, "class", "c-bar")
	}
	for _, q := range []struct {
		v     float64
		name  string
		color string
		dy    float64
	}{{p50, "p50", Orange, 0}, {p90, "p90", Red, 13}} {
		// The line from its label, above the plot (p50's above p90's), down.
		x := f.x.s.Pos(q.v)
		y := f.t - 19 + q.dy
		c.el("line", q.name+" "+Num(q.v)+" ms", "x1", x, "y1", y+2, "x2", x, "y2", f.b, "stroke", q.color, "stroke-width", 1.5, "stroke-dasharray", "4 2", "class", "c-q")
		anchor, dx := "start", 3.0
		if x > f.r-80 {
			anchor, dx = "end", -3
		}
		c.text(x+dx, y+4, anchor, "c-q", q.name+" "+Num(q.v)+" ms", "fill", q.color)
	}
	title := "Decision latency"
	caption := fmt.Sprintf("Latency of the %d answered decisions, %s–%s ms, in bins of %s ms; p50 %s ms, p90 %s ms (nearest rank).",
		len(ms), Num(ms[0]), Num(ms[len(ms)-1]), Num(bw), Num(p50), Num(p90))
	return &Chart{ID: id, Title: title, Caption: caption, SVG: c.finish(w, h, title, caption)}
}

// Agreement draws, per dataset, the share of answered records whose
// choice is the reference's: a bar from 0 to 100 % split into agreeing
// (green) and differing (red, hatched by its label), with the counts.
func Agreement(id string, rows []report.DecisionRow) *Chart {
	type tally struct{ agree, differ int }
	by := map[string]*tally{}
	var names []string
	for _, r := range rows {
		if r.Status != report.Answered || r.Reference == "" {
			continue
		}
		d := r.Dataset
		if d == "" {
			d = "(no dataset)"
		}
		if by[d] == nil {
			by[d] = &tally{}
			names = append(names, d)
		}
		if r.Choice == r.Reference {
			by[d].agree++
		} else {
			by[d].differ++
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	lw := 0
	for _, n := range names {
		lw = max(lw, len([]rune(n)))
	}
	const w = 400.0
	l := math.Min(10+6.8*float64(lw), 160)
	bh := 18.0
	t := 34.0
	h := t + float64(len(names))*(bh+8) + 40
	f := frame{w: w, h: h, l: l, r: w - 90, t: t, b: t + float64(len(names))*(bh+8)}
	f.x = linAxis(0, 100, f.l, f.r, 5, "agree with the reference (%)")
	c := &canvas{id: id, w: w}
	legend(c, f.l, 14, w-8, []entry{{"box", Green, "same choice"}, {"box", Red, "different choice"}})
	for i, tk := range f.x.ticks {
		x := f.x.s.Pos(tk)
		c.line(x, f.t, x, f.b, "c-gr", "")
		c.text(x, f.b+15, "middle", "c-m c-xt", f.x.labels[i])
	}
	c.line(f.l, f.b, f.r, f.b, "c-ax", "")
	c.text((f.l+f.r)/2, f.b+30, "middle", "c-xa", f.x.title)
	tot, agr := 0, 0
	for i, n := range names {
		tl := by[n]
		all := tl.agree + tl.differ
		tot, agr = tot+all, agr+tl.agree
		y := f.t + 4 + float64(i)*(bh+8)
		c.text(f.l-5, y+bh/2+4, "end", "c-yt", n)
		xa := f.x.s.Pos(100 * float64(tl.agree) / float64(all))
		c.el("rect", fmt.Sprintf("%s: %d of %d the reference's choice", n, tl.agree, all), "x", f.l, "y", y, "width", xa-f.l, "height", bh, "fill", Green, "class", "c-bar")
		if tl.differ > 0 {
			c.el("rect", fmt.Sprintf("%s: %d of %d differ from the reference", n, tl.differ, all), "x", xa, "y", y, "width", f.r-xa, "height", bh, "fill", Red, "class", "c-bar c-bad")
		}
		s := fmt.Sprintf("%d/%d", tl.agree, all)
		if tl.differ > 0 {
			s += " ✗"
		}
		c.text(f.r+5, y+bh/2+4, "start", "c-n", s)
	}
	title := "Agreement with the reference, by dataset"
	caption := fmt.Sprintf("Per dataset, the answered records whose choice is the reference's: %d of %d overall.", agr, tot)
	return &Chart{ID: id, Title: title, Caption: caption, SVG: c.finish(w, h, title, caption)}
}
