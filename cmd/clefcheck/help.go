package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/runner"
)

// The help follows gh, go and kubectl: 'clefcheck help [CMD]', '--help' and
// '-h' print to stdout and exit 0; a usage error prints to stderr and exits
// 2. A command's help is its hand-written synopsis and description
// (Usage) followed by its flags, generated from the flag definitions.

// commandGroups lists the commands with their one-line descriptions, in
// the order the top-level help shows them. A command that is not
// registered in commands (serve and site exist only natively) is skipped.
var commandGroups = []struct {
	title    string
	commands [][2]string
}{
	{"Checks", [][2]string{
		{"audit", "check an adapter: inventory, SVD form, spectra, claims (and the rebuild)"},
		{"rebuild", "check W_base + s·B·A against the tuned checkpoint"},
		{"decide", "send records to a decision server and check its answers"},
		{"hidden", "compare captured hidden states with the references"},
		{"answers", "compare answers with the reference answers"},
		{"claims", "list the built-in claims profiles, or print one"},
		{"badge", "write a report's verdict as an SVG badge"},
	}},
	{"The demo world", [][2]string{
		{"world", "write the demo world, or the full-size twin of the real adapter"},
	}},
	{"Servers", [][2]string{
		{"decisiond", "serve the demo world's decision API"},
		{"proxy", "forward the decision API, answering CORS for a page's origin"},
		{"serve", "host the web app, the demo world and its decision service"},
	}},
	{"Site", [][2]string{
		{"site", "write the static site (GitHub Pages, a Hugging Face Space)"},
	}},
}

// topHelp is the top-level help: what clefcheck is, its commands grouped
// with one line each, and where to go next.
func topHelp() string {
	var b strings.Builder
	b.WriteString(`clefcheck verifies PEFT LoRA adapters extracted by SVD, and the claims made for them.

Usage:
  clefcheck <command> [flags] [arguments]
`)
	for _, g := range commandGroups {
		var lines []string
		for _, c := range g.commands {
			if _, ok := commands[c[0]]; ok {
				lines = append(lines, fmt.Sprintf("  %-10s %s\n", c[0], c[1]))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(&b, "\n%s:\n%s", g.title, strings.Join(lines, ""))
		}
	}
	b.WriteString(`
Flags:
  -h, --help     print this help
  --version      print the version (also: clefcheck version)

Run 'clefcheck help <command>' or 'clefcheck <command> -h' for a command's flags.
Exit status: 0 pass or warn, 1 fail, 2 could not run or a usage error.
`)
	return b.String()
}

// helpRequest is the answer of parse to -h or --help: it carries the
// command's flag set, from which the help lists the flags.
type helpRequest struct{ fs *flag.FlagSet }

func (h *helpRequest) Error() string { return flag.ErrHelp.Error() }
func (h *helpRequest) Unwrap() error { return flag.ErrHelp }

// commandHelp is the full help of the command name: its synopsis and
// description, then its flags. Every command defines its flags and parses
// them before it does anything else, so asking it to run with -h gets its
// flag set without side effects.
func commandHelp(name string) (string, bool) {
	mk, ok := commands[name]
	if !ok {
		return "", false
	}
	cmd := mk()
	var h *helpRequest
	if err := cmd.Run(context.Background(), []string{"-h"}); errors.As(err, &h) {
		return cmd.Usage() + flagsHelp(h.fs), true
	}
	return cmd.Usage(), true
}

// synopsis is the first paragraph of a command's help (its "Usage:" line).
func synopsis(help string) string {
	if i := strings.Index(help, "\n\n"); i >= 0 {
		return help[:i+1]
	}
	return help
}

// flagsSection is the "Flags:" part of a help, or "".
func flagsSection(help string) string {
	if i := strings.Index(help, "\nFlags:\n"); i >= 0 {
		return help[i:]
	}
	return ""
}

// flagsHelp lists the flags of fs, sorted, from their definitions: the
// name, a placeholder for the value (the usage's `quoted` word, or the
// type), the usage text wrapped, and the default when it is not the zero
// value. -h/--help is always there.
func flagsHelp(fs *flag.FlagSet) string {
	type row struct{ left, text string }
	rows := []row{}
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if name != "" {
			left += " " + placeholder(name)
		}
		if _, ok := f.Value.(*multiFlag); ok {
			usage += " (repeatable)"
		}
		if d := defaultOf(f); d != "" {
			usage += " (default " + d + ")"
		}
		rows = append(rows, row{left, usage})
	})
	rows = append(rows, row{"-h, --help", "print this help"})
	sort.SliceStable(rows, func(i, j int) bool { return strings.TrimLeft(rows[i].left, "-") < strings.TrimLeft(rows[j].left, "-") })
	width := 0
	for _, r := range rows {
		if n := len([]rune(r.left)); n <= 24 {
			width = max(width, n)
		}
	}
	var b strings.Builder
	b.WriteString("\nFlags:\n")
	for _, r := range rows {
		lines := wrap(r.text, 78-4-width)
		if n := len([]rune(r.left)); n > width { // too long: the text goes below
			fmt.Fprintf(&b, "  %s\n", r.left)
			for _, l := range lines {
				fmt.Fprintf(&b, "  %*s  %s\n", width, "", l)
			}
			continue
		}
		for i, l := range lines {
			left := ""
			if i == 0 {
				left = r.left
			}
			fmt.Fprintf(&b, "  %-*s  %s\n", width, left, l)
		}
	}
	return b.String()
}

// placeholder is the name shown for a flag's value: the usage's quoted
// word as written, or the value's type in capitals (N for numbers).
func placeholder(name string) string {
	switch name {
	case "int", "uint", "int64", "uint64":
		return "N"
	case "float":
		return "X"
	case "string", "duration", "value":
		return strings.ToUpper(name)
	}
	return name
}

// defaultOf is a flag's default as the help shows it, or "" for the zero
// value (false, 0, empty).
func defaultOf(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return ""
	}
	if d, err := time.ParseDuration(f.DefValue); err == nil && strings.HasSuffix(f.DefValue, "s") {
		return shortDuration(d)
	}
	return f.DefValue
}

// shortDuration prints 2m0s as 2m and 1h0m0s as 1h.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// wrap breaks text into lines of at most width columns, at spaces.
func wrap(text string, width int) []string {
	width = max(width, 30)
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+1+len([]rune(w)) > width:
			lines = append(lines, line)
			line = w
		default:
			line += " " + w
		}
	}
	return append(lines, line)
}

// versionLine is what --version prints: the module version, the VCS
// revision it was built from (and whether the tree was modified), the Go
// version and platform.
func versionLine() string {
	t := runner.Tool()
	rev := "revision unknown (built without VCS information)"
	if t.Revision != "" {
		rev = "revision " + t.Revision
		if t.Modified {
			rev += " (modified)"
		}
	}
	return fmt.Sprintf("clefcheck version %s, %s, built with %s for %s/%s\n", t.Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
