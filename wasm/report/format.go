package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Helpers for showing figures and untrusted strings, shared by the pages
// and the Markdown reports.

// Clip shortens s to at most n bytes (on a character boundary) and marks
// the cut with "…": strings from files and servers are shown clipped.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// OrNone is s, or "none" when it is empty.
func OrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// NumOr formats x with f, or "–" when !ok.
func NumOr(x float64, ok bool, f string) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf(f, x)
}

// FirstOr formats x[0], or "–" when x is empty.
func FirstOr(x []float64) string {
	if len(x) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.4g", x[0])
}

// PtrOr formats *x with f, or "–" when x is nil.
func PtrOr(x *float64, f string) string {
	if x == nil {
		return "–"
	}
	return fmt.Sprintf(f, *x)
}

// MDCell keeps a Markdown table cell on one line, its pipes escaped and
// its length bounded.
func MDCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(Clip(s, 300), "|", "\\|"), "\n", " ")
}

// Count writes n with thousands separators: 700366848 → "700,366,848".
func Count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Plural is "1 worker", "2 workers": n with the noun, its plural made by
// adding s.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Count(int64(n)) + " " + noun + "s"
}

// CSV writes a header and rows as CSV (RFC 4180): fields that hold a
// comma, a double quote, a CR or a LF are quoted, their quotes doubled;
// lines end with CRLF. A field that a spreadsheet would run as a formula
// (starting with =, +, - or @ and not a number) is kept as text with a
// leading apostrophe: the cells may come from files and servers.
func CSV(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(fs []string) {
		for i, f := range fs {
			if i > 0 {
				b.WriteByte(',')
			}
			if f != "" && strings.ContainsRune("=+-@", rune(f[0])) && !numeric(f) {
				f = "'" + f
			}
			if strings.ContainsAny(f, ",\"\r\n") {
				f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
			b.WriteString(f)
		}
		b.WriteString("\r\n")
	}
	line(header)
	for _, r := range rows {
		line(r)
	}
	return b.String()
}

// numeric reports whether s reads as a number (-1.5e-3, +2).
func numeric(s string) bool {
	digits := false
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits = true
		case (c == '-' || c == '+') && (i == 0 || s[i-1] == 'e' || s[i-1] == 'E'):
		case c == '.' || c == 'e' || c == 'E':
		default:
			return false
		}
	}
	return digits
}
