package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// The text output reads as prose and tables: counts with their noun in
// the right number, sizes with units, and colour only where it helps and
// is wanted.

// count is n with its noun, singular or plural: "1 finding", "2 findings".
// A noun whose plural is not noun+"s" gives both: count(n, "matrix", "matrices").
func count(n int, noun ...string) string {
	if n == 1 {
		return group(int64(n)) + " " + noun[0]
	}
	if len(noun) > 1 {
		return group(int64(n)) + " " + noun[1]
	}
	return group(int64(n)) + " " + noun[0] + "s"
}

// group prints n with thousands separators: 700,366,848.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// size prints a byte count in SI units, as the Hub shows file sizes:
// 815 B, 1.15 MB, 1.40 GB.
func size(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	x := float64(n)
	for _, u := range []string{"kB", "MB", "GB", "TB"} {
		x /= 1000
		if x < 1000 || u == "TB" {
			return fmt.Sprintf("%.3g %s", x, u)
		}
	}
	return ""
}

// tally prints a map of counts as "BF16 (372), F32 (4)", sorted by key.
func tally(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%d)", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// colorMode is --color: auto (on a terminal, unless NO_COLOR is set),
// always or never.
type colorMode string

func (c *colorMode) String() string { return string(*c) }
func (c *colorMode) Set(v string) error {
	switch v {
	case "auto", "always", "never":
		*c = colorMode(v)
		return nil
	}
	return fmt.Errorf("want auto, always or never")
}

// colorFlag defines --color on fs.
func colorFlag(fs *flag.FlagSet) *colorMode {
	c := colorMode("auto")
	fs.Var(&c, "color", "colour the verdict and severities: `WHEN` is auto (on a terminal, unless NO_COLOR is set), always or never")
	return &c
}

// colorOn tells whether output to w is coloured in mode c: always; never;
// auto only when w is a terminal, NO_COLOR (https://no-color.org) is unset
// or empty, and TERM is not dumb. --color always overrides NO_COLOR, as a
// command-line choice should.
func colorOn(c colorMode, w io.Writer) bool {
	switch c {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// styled is the writer the text printers get: it knows whether to colour.
type styled struct {
	io.Writer
	color bool
}

// ANSI SGR codes: the verdict and severity colours (grey for "could not
// be checked", never red: it is not a failure).
var palette = map[string]string{
	"pass": "32", "fail": "31", "warn": "33", "error": "90", "info": "",
}

// paint wraps text in the colour of key when w is coloured; the text is
// always there, so nothing is conveyed by colour alone.
func paint(w io.Writer, key, text string, bold bool) string {
	s, ok := w.(styled)
	if !ok || !s.color || palette[key] == "" {
		return text
	}
	code := palette[key]
	if bold {
		code = "1;" + code
	}
	return "\033[" + code + "m" + text + "\033[0m"
}

// printVerdict ends a check's text: "verdict: PASS", coloured on a terminal.
func printVerdict(w io.Writer, v report.Verdict) {
	fmt.Fprintf(w, "\nverdict: %s\n", paint(w, string(v), v.Label(), true))
}
