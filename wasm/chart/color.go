package chart

import (
	"fmt"
	"math"
	"strconv"
)

// The inks (each passes WCAG AA on white: TestContrast).
const (
	Blue   = "#1a56c4" // measured values
	Orange = "#9a4d00" // the extraction report, tolerances
	Red    = "#b3261e" // beyond tolerance
	Green  = "#1a7f37" // agreement
	Purple = "#6e40c9" // the numerical-rank cut
	Grey   = "#57606a" // secondary text, axes
	Band   = "#e3a33a" // a tolerance band's fill (drawn translucent; its edges and label carry it)
)

type rgb [3]float64

func hex(s string) rgb {
	var c rgb
	for i := range c {
		if v, err := strconv.ParseUint(s[1+2*i:3+2*i], 16, 8); err == nil && len(s) == 7 {
			c[i] = float64(v)
		}
	}
	return c
}

func (c rgb) String() string {
	return fmt.Sprintf("#%02x%02x%02x", int(math.Round(c[0])), int(math.Round(c[1])), int(math.Round(c[2])))
}

// ramp interpolates between stops at t in [0, 1].
func ramp(stops []string, t float64) rgb {
	t = math.Max(0, math.Min(1, t))
	if math.IsNaN(t) {
		t = 0
	}
	f := t * float64(len(stops)-1)
	i := min(int(f), len(stops)-2)
	a, b := hex(stops[i]), hex(stops[i+1])
	u := f - float64(i)
	return rgb{a[0] + u*(b[0]-a[0]), a[1] + u*(b[1]-a[1]), a[2] + u*(b[2]-a[2])}
}

// Sequential runs from light to dark blue (low to high); Diverging from
// blue (negative) through white (zero) to red (positive).
var (
	Sequential = []string{"#f1f5fb", "#c9dbf1", "#8db4e2", "#4d86c8", "#225aa6", "#0c3570"}
	Diverging  = []string{"#1d4f91", "#6d9bd0", "#c5d8ee", "#ffffff", "#f4c6bd", "#d6604d", "#8c1a17"}
)

// lum approximates WCAG's relative luminance with a gamma of 2 (math.Pow
// would cost app.wasm some 20 KB): inkOn's threshold 0.21 is where the
// exact 0.179 falls for greys, and TestContrast checks its choice on every
// fill of both ramps with the exact formula.
func lum(c rgb) float64 {
	r, g, b := c[0]/255, c[1]/255, c[2]/255
	return 0.2126*r*r + 0.7152*g*g + 0.0722*b*b
}

// inkOn is the text colour readable on a fill: black or white (at
// luminance 0.179 both contrast 4.58:1, so either side passes AA).
func inkOn(fill rgb) string {
	if lum(fill) > 0.21 {
		return "#000000"
	}
	return "#ffffff"
}

// colorBar draws a legend's colour scale: a gradient of stops over the
// scale s (horizontal, at y, height h) with its ticks and labels below.
func colorBar(c *canvas, stops []string, ax axis, y, h float64, title string) {
	gid := c.id + "-grad"
	c.raw(`<defs><linearGradient id="` + esc(gid) + `" x1="0" x2="1" y1="0" y2="0">`)
	for i, s := range stops {
		c.raw(fmt.Sprintf(`<stop offset="%.3f" stop-color="%s"/>`, float64(i)/float64(len(stops)-1), s))
	}
	c.raw(`</linearGradient></defs><g class="c-scale">`)
	a, b := ax.s.A, ax.s.B
	c.el("rect", title, "x", a, "y", y, "width", b-a, "height", h, "fill", "url(#"+gid+")", "stroke", Grey, "stroke-width", 0.5)
	for i, t := range ax.ticks {
		x := ax.s.Pos(t)
		c.line(x, y+h, x, y+h+3, "c-ax", "")
		lo, _, anchor := extent(x, ax.labels[i], c.w)
		switch anchor {
		case "start":
			c.text(lo, y+h+13, anchor, "c-m c-st", ax.labels[i])
		case "end":
			c.text(c.w-1, y+h+13, anchor, "c-m c-st", ax.labels[i])
		default:
			c.text(x, y+h+13, anchor, "c-m c-st", ax.labels[i])
		}
	}
	c.text(a, y-4, "start", "c-sa", title)
	c.raw(`</g>`)
}

// extent is where a label centred at x would sit in a chart of width w
// (about 7.4 px a character), kept inside it: its ends and anchor.
func extent(x float64, label string, w float64) (lo, hi float64, anchor string) {
	width := 7.4 * float64(len([]rune(label)))
	switch {
	case x-width/2 < 1:
		return 1, 1 + width, "start"
	case x+width/2 > w-1:
		return w - 1 - width, w - 1, "end"
	}
	return x - width/2, x + width/2, "middle"
}
