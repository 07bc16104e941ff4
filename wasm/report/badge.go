package report

import (
	"fmt"
	"html"
	"unicode/utf8"
)

// badgeColors are the verdicts' colours (white text on each passes WCAG AA
// contrast); error is grey: it is never shown as a failure.
var badgeColors = map[Verdict]string{VerdictPass: "#1b5e20", VerdictWarn: "#8a4b00", VerdictFail: "#b71c1c", VerdictError: "#555555"}

// Badge is an SVG verdict badge, "label | VERDICT", in the flat style of
// README badges, with its text as a title for screen readers.
func Badge(label string, v Verdict) string {
	color, ok := badgeColors[v]
	if !ok {
		v, color = "unknown", "#555555"
	}
	text := v.Label()
	if v == VerdictError {
		text = "ERROR (not checked)"
	}
	lw, rw := 7*utf8.RuneCountInString(label)+12, 7*utf8.RuneCountInString(text)+12
	l, t := html.EscapeString(label), html.EscapeString(text)
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="20" role="img" aria-label="%s: %s">
<title>%s: %s</title>
<rect width="%d" height="20" rx="3" fill="#333333"/>
<rect x="%d" width="%d" height="20" rx="3" fill="%s"/>
<rect x="%d" width="4" height="20" fill="%s"/>
<g fill="#ffffff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">
<text x="6" y="14">%s</text>
<text x="%d" y="14">%s</text>
</g>
</svg>
`, lw+rw, l, t, l, t, lw+rw, lw, rw, color, lw, color, l, lw+6, t)
}
