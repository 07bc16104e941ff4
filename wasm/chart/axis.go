package chart

import (
	"math"
	"strconv"
	"strings"
)

// Scale maps a domain [Lo, Hi] to pixels [A, B], linearly or by log10.
type Scale struct {
	Lo, Hi float64
	A, B   float64
	Log    bool
}

// Pos is v's pixel; values outside the domain are clamped to it (a log
// scale's zero or negative values sit at its bottom).
func (s Scale) Pos(v float64) float64 {
	lo, hi := s.Lo, s.Hi
	if s.Log {
		if v <= 0 || math.IsNaN(v) {
			v = lo
		}
		lo, hi, v = math.Log10(lo), math.Log10(hi), math.Log10(math.Max(v, s.Lo))
	}
	if hi == lo {
		return (s.A + s.B) / 2
	}
	t := (v - lo) / (hi - lo)
	t = math.Max(0, math.Min(1, t))
	return s.A + t*(s.B-s.A)
}

// nice is a step of 1, 2 or 5 × 10ᵏ near x.
func nice(x float64) float64 {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow10(int(math.Floor(math.Log10(x))))
	switch f := x / p; {
	case f < 1.5:
		return p
	case f < 3:
		return 2 * p
	case f < 7:
		return 5 * p
	}
	return 10 * p
}

// LinearTicks are about n ticks with a nice step covering [lo, hi]: the
// domain widened to whole steps, the ticks and the step.
func LinearTicks(lo, hi float64, n int) (dlo, dhi float64, ticks []float64, step float64) {
	if hi < lo {
		lo, hi = hi, lo
	}
	if hi == lo {
		d := math.Max(math.Abs(lo)/10, 1e-9)
		if lo == 0 {
			d = 1
		}
		lo, hi = lo-d, hi+d
	}
	step = nice((hi - lo) / float64(max(1, n)))
	dlo, dhi = math.Floor(lo/step+1e-9)*step, math.Ceil(hi/step-1e-9)*step
	for i := 0; ; i++ {
		v := dlo + float64(i)*step
		if v > dhi+step/2 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, v)
	}
	return dlo, dhi, ticks, step
}

// LogTicks cover [lo, hi] (both > 0) with whole decades: the domain
// widened to decades and the ticks, every decade (every k-th when there
// are more than most), with 2 and 5 between when it spans one decade.
func LogTicks(lo, hi float64, most int) (dlo, dhi float64, ticks []float64) {
	if lo <= 0 || math.IsNaN(lo) {
		lo = hi / 1e3
	}
	if hi <= lo {
		hi = lo * 10
	}
	a, b := math.Floor(math.Log10(lo)+1e-9), math.Ceil(math.Log10(hi)-1e-9)
	if b == a {
		b = a + 1
	}
	k := math.Ceil((b - a) / float64(max(1, most)))
	a = math.Floor(a/k) * k
	b = math.Ceil(b/k) * k
	for e := a; e <= b; e += k {
		p := math.Pow10(int(e))
		ticks = append(ticks, p)
		if b-a <= 1 && e < b {
			ticks = append(ticks, 2*p, 5*p)
		}
	}
	return math.Pow10(int(a)), math.Pow10(int(b)), ticks
}

// superscript writes an integer in superscript digits (a strings.Replacer
// would cost app.wasm some 60 KB).
func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	var b strings.Builder
	for _, ch := range strconv.Itoa(n) {
		if ch == '-' {
			b.WriteString("⁻")
		} else {
			r := []rune(digits)[ch-'0']
			b.WriteRune(r)
		}
	}
	return b.String()
}

// LogLabel writes a log tick: 1, 10, 10ⁿ, or m·10ⁿ.
func LogLabel(v float64) string {
	e := math.Floor(math.Log10(v) + 1e-9)
	m := math.Round(v / math.Pow10(int(e)))
	pre := ""
	if m != 1 {
		pre = strconv.Itoa(int(m)) + "·"
	}
	switch e {
	case 0:
		if m == 1 {
			return "1"
		}
		return strconv.Itoa(int(m))
	case 1:
		if m == 1 {
			return "10"
		}
	}
	return pre + "10" + superscript(int(e))
}

// LinearLabel writes a linear tick with the decimals its step needs.
func LinearLabel(v, step float64) string {
	if a := math.Abs(v); a >= 1e6 || (a > 0 && step < 1e-4) {
		return Num(v)
	}
	d := 0
	if step > 0 && step < 1 {
		d = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// Num writes a figure with 4 significant digits (hover texts, labels).
func Num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "not finite"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// axis is an axis of a frame: its scale, ticks and labels.
type axis struct {
	s      Scale
	ticks  []float64
	labels []string
	title  string
}

// linAxis and logAxis make an axis over [lo, hi] onto [a, b].
func linAxis(lo, hi, a, b float64, n int, title string) axis {
	dlo, dhi, ts, step := LinearTicks(lo, hi, n)
	ax := axis{s: Scale{Lo: dlo, Hi: dhi, A: a, B: b}, ticks: ts, title: title}
	for _, t := range ts {
		ax.labels = append(ax.labels, LinearLabel(t, step))
	}
	return ax
}

func logAxis(lo, hi, a, b float64, most int, title string) axis {
	dlo, dhi, ts := LogTicks(lo, hi, most)
	ax := axis{s: Scale{Lo: dlo, Hi: dhi, A: a, B: b, Log: true}, ticks: ts, title: title}
	for _, t := range ts {
		ax.labels = append(ax.labels, LogLabel(t))
	}
	return ax
}

// frame is a plot area inside margins, with its two axes.
type frame struct {
	w, h       float64 // the whole SVG
	l, r, t, b float64 // the plot area's edges
	x, y       axis
}

// axes draws the grid, both axes with their ticks, labels and titles
// (the x axis's labels below, the y axis's to the left, rotated title).
func (f *frame) axes(c *canvas) {
	c.raw(`<g class="c-axes">`)
	for i, t := range f.y.ticks {
		y := f.y.s.Pos(t)
		c.line(f.l, y, f.r, y, "c-gr", "")
		c.text(f.l-4, y+3.5, "end", "c-m c-yt", f.y.labels[i])
	}
	for i, t := range f.x.ticks {
		x := f.x.s.Pos(t)
		c.line(x, f.b, x, f.b+4, "c-ax", "")
		// A label that would pass the right edge ends at it.
		if x+3.7*float64(len([]rune(f.x.labels[i]))) > f.w-1 {
			c.text(f.w-1, f.b+15, "end", "c-m c-xt", f.x.labels[i])
		} else {
			c.text(x, f.b+15, "middle", "c-m c-xt", f.x.labels[i])
		}
	}
	c.line(f.l, f.b, f.r, f.b, "c-ax", "")
	c.line(f.l, f.t, f.l, f.b, "c-ax", "")
	c.text((f.l+f.r)/2, f.b+30, "middle", "c-xa", f.x.title)
	c.text(12, (f.t+f.b)/2, "middle", "c-ya", f.y.title, "transform", "rotate(-90 12 "+px((f.t+f.b)/2)+")")
	c.raw(`</g>`)
}

// legend draws entries left to right at y: a swatch (a line, a box or a
// mark) and its label; it wraps at width w.
type entry struct {
	kind  string // line, dash, box, band, mark
	color string
	label string
}

func legend(c *canvas, x0, y, w float64, es []entry) float64 {
	x := x0
	c.raw(`<g class="c-legend">`)
	for _, e := range es {
		width := 30 + 7.2*float64(len([]rune(e.label)))
		if x > x0 && x+width > w {
			x, y = x0, y+15
		}
		switch e.kind {
		case "line":
			c.el("line", "", "x1", x, "y1", y-4, "x2", x+14, "y2", y-4, "stroke", e.color, "stroke-width", 2.0)
		case "dash":
			c.el("line", "", "x1", x, "y1", y-4, "x2", x+14, "y2", y-4, "stroke", e.color, "stroke-width", 1.5, "stroke-dasharray", "4 2")
		case "band":
			c.el("rect", "", "x", x, "y", y-9, "width", 14.0, "height", 10.0, "fill", e.color, "fill-opacity", "0.3")
		case "none":
			c.el("rect", "", "x", x, "y", y-9, "width", 14.0, "height", 10.0, "fill", "#ffffff", "stroke", "#8c959f", "stroke-dasharray", "2 2")
		case "ring":
			c.el("circle", "", "cx", x+7, "cy", y-4, "r", 4.5, "fill", "none", "stroke", e.color, "stroke-width", 1.2)
		case "mark":
			c.text(x+7, y, "middle", "c-mk", e.color)
		default:
			c.el("rect", "", "x", x, "y", y-9, "width", 14.0, "height", 10.0, "fill", e.color)
		}
		c.text(x+18, y, "start", "c-lg", e.label)
		x += width
	}
	c.raw(`</g>`)
	return y
}
