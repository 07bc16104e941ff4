package chart

import (
	"math"
	"strconv"
	"strings"
)

// Chart is one figure: its SVG (standalone: a file of its own is a valid
// SVG document) and its caption.
type Chart struct {
	ID      string
	Title   string
	Caption string
	SVG     string
}

// HTML is the figure for a page: the SVG and its caption below it in a
// <figure> (one root element, for app.Raw).
func (c *Chart) HTML() string {
	if c == nil {
		return ""
	}
	return `<figure class="chart" id="` + esc(c.ID) + `-fig">` + c.SVG + `<figcaption>` + esc(c.Caption) + `</figcaption></figure>`
}

// esc escapes text for XML and HTML alike (element text and quoted
// attribute values), dropping the control characters XML cannot hold.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&#39;")
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0xFFFE, r == 0xFFFF:
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// canvas accumulates an SVG's elements.
type canvas struct {
	b  strings.Builder
	id string
	w  float64 // the SVG's width
}

// px writes a coordinate with one decimal (no "-0").
func px(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// attrs writes name="value" pairs; a float64 value is a coordinate.
func (c *canvas) open(name string, kv ...any) {
	c.b.WriteByte('<')
	c.b.WriteString(name)
	for i := 0; i+1 < len(kv); i += 2 {
		c.b.WriteByte(' ')
		c.b.WriteString(kv[i].(string))
		c.b.WriteString(`="`)
		switch v := kv[i+1].(type) {
		case float64:
			c.b.WriteString(px(v))
		case int:
			c.b.WriteString(strconv.Itoa(v))
		case string:
			c.b.WriteString(esc(v))
		}
		c.b.WriteByte('"')
	}
}

// el writes an element with an optional <title> (its hover text).
func (c *canvas) el(name, title string, kv ...any) {
	c.open(name, kv...)
	if title == "" {
		c.b.WriteString("/>")
		return
	}
	c.b.WriteString("><title>")
	c.b.WriteString(esc(title))
	c.b.WriteString("</title></")
	c.b.WriteString(name)
	c.b.WriteByte('>')
}

// text writes a <text> element.
func (c *canvas) text(x, y float64, anchor, class, s string, kv ...any) {
	c.open("text", append([]any{"x", x, "y", y, "text-anchor", anchor, "class", class}, kv...)...)
	c.b.WriteByte('>')
	c.b.WriteString(esc(s))
	c.b.WriteString("</text>")
}

func (c *canvas) line(x1, y1, x2, y2 float64, class string, title string) {
	c.el("line", title, "x1", x1, "y1", y1, "x2", x2, "y2", y2, "class", class)
}

func (c *canvas) raw(s string) { c.b.WriteString(s) }

// points is a polyline's or polygon's points attribute.
func points(xs, ys []float64) string {
	var b strings.Builder
	for i := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(px(xs[i]))
		b.WriteByte(',')
		b.WriteString(px(ys[i]))
	}
	return b.String()
}

// style is every chart's own style sheet: a standalone file looks as it
// does in the page (the page's CSS may refine it). Text takes its colour
// from the root's fill attribute, so that a text's own fill attribute
// wins (a CSS rule would override it).
const style = `<style>svg.chart text{font:12px system-ui,sans-serif}svg.chart .c-t{font-weight:600}svg.chart .c-m{fill:#57606a}.c-ax{stroke:#57606a;stroke-width:1}.c-gr{stroke:#d8dee4;stroke-width:1}.c-tol{stroke:#9a4d00;stroke-width:1.5;stroke-dasharray:5 3}svg.chart .c-tl{fill:#9a4d00}.c-cut{stroke:#6e40c9;stroke-width:1.5;stroke-dasharray:2 2}svg.chart .c-cl{fill:#6e40c9}svg.chart .c-mk{font-weight:700}svg.chart .c-tl,svg.chart .c-cl,svg.chart text.c-q,svg.chart .c-form{paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}</style>`

// finish wraps the elements drawn into the SVG document.
func (c *canvas) finish(w, h float64, title, caption string) string {
	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="`)
	b.WriteString(esc(c.id))
	b.WriteString(`" viewBox="0 0 `)
	b.WriteString(px(w))
	b.WriteByte(' ')
	b.WriteString(px(h))
	b.WriteString(`" width="`)
	b.WriteString(px(w))
	b.WriteString(`" height="`)
	b.WriteString(px(h))
	b.WriteString(`" fill="#1f2328" role="img" aria-labelledby="`)
	b.WriteString(esc(c.id) + `-title ` + esc(c.id) + `-desc">`)
	b.WriteString(`<title id="` + esc(c.id) + `-title">` + esc(title) + `</title>`)
	b.WriteString(`<desc id="` + esc(c.id) + `-desc">` + esc(caption) + `</desc>`)
	b.WriteString(style)
	b.WriteString(c.b.String())
	b.WriteString(`</svg>`)
	return b.String()
}
