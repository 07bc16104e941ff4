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
