package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// The CLI follows gh, go and kubectl: help asked for goes to stdout with
// exit 0, usage errors to stderr with exit 2, the flags' help comes from
// their definitions, the text output is prose (no Go syntax, plurals
// right) and is coloured only when wanted.

// TestHelpGoesToStdout: every way of asking for help prints it on stdout
// and exits 0; 'help CMD' prints that command's help.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "help"}} {
		code, out, errs := cli(t, args...)
		if code != 0 || errs != "" || !strings.Contains(out, "Usage:\n  clefcheck <command>") || !strings.Contains(out, "Checks:") {
			t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
		}
	}
	for name := range commands {
		for _, args := range [][]string{{"help", name}, {name, "-h"}, {name, "--help"}, {"--help", name}} {
			code, out, errs := cli(t, args...)
			if code != 0 || errs != "" || !strings.HasPrefix(out, "Usage: clefcheck "+name) || strings.Contains(out, "Checks:") || !strings.Contains(out, "\nFlags:\n") {
				t.Errorf("%v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
			}
		}
	}
	if code, out, _ := cli(t, "help", "version"); code != 0 || !strings.Contains(out, "clefcheck version") {
		t.Errorf("help version: exit %d\n%s", code, out)
	}
}

// TestTopLevelHelpListsEveryCommand: the command list has every command,
// each with a one-line description, in the four groups.
func TestTopLevelHelpListsEveryCommand(t *testing.T) {
	h := topHelp()
	for _, g := range []string{"Checks:", "The demo world:", "Servers:", "Site:"} {
		if !strings.Contains(h, "\n"+g+"\n") {
			t.Errorf("no group %q in\n%s", g, h)
		}
	}
	listed := map[string]bool{}
	for _, g := range commandGroups {
		for _, c := range g.commands {
			listed[c[0]] = true
			if _, ok := commands[c[0]]; !ok {
				t.Errorf("%s is described but is no command", c[0])
			}
		}
	}
	for name := range commands {
		if !listed[name] || !regexp.MustCompile(`(?m)^  `+name+` +\S.*$`).MatchString(h) {
			t.Errorf("%s has no one-line description in the help", name)
		}
	}
}

// TestUsageErrorsGoToStderr: no arguments, an unknown command or flag, and
// 'help nosuch' print to stderr, with the usage, and exit 2.
func TestUsageErrorsGoToStderr(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"Usage:\n  clefcheck <command>"}},
		{[]string{"help", "nosuch"}, []string{`unknown command "nosuch"`, "Checks:"}},
		{[]string{"help", "audit", "decide"}, []string{"Usage: clefcheck help"}},
		{[]string{"adit"}, []string{`unknown command "adit"`, "Did you mean this?\n\taudit", "Checks:"}},
		{[]string{"--bogus"}, []string{"unknown flag --bogus", "Checks:"}},
		{[]string{"version", "x"}, []string{"Usage: clefcheck --version"}},
		{[]string{"audit", "--bogus", "x"}, []string{"clefcheck audit: unknown flag --bogus", "Usage: clefcheck audit", "--claims NAME|FILE", "clefcheck help audit"}},
		{[]string{"audit", "--workers"}, []string{"--workers needs a value"}},
		{[]string{"audit", "--workers", "many", "x"}, []string{`invalid value "many" for --workers`}},
		{[]string{"audit", "--color", "sometimes", "x"}, []string{"--color", "want auto, always or never"}},
		{[]string{"hidden", "onlyone"}, []string{"give REF and CAND folders", "Usage: clefcheck hidden"}},
	} {
		code, out, errs := cli(t, c.args...)
		if code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errs)
			}
		}
	}
}

// TestVersion: --version and version print the module version, the
// revision and the Go version on stdout.
func TestVersion(t *testing.T) {
	re := regexp.MustCompile(`^clefcheck version \S+, revision \S+.*, built with go1\.\d+\S* for \w+/\w+\n$`)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, out, errs := cli(t, args...)
		if code != 0 || errs != "" || !re.MatchString(out) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", args, code, errs, out)
		}
	}
}

// flagSetOf asks a command for its flags the way the help does.
func flagSetOf(t *testing.T, name string) *flag.FlagSet {
	t.Helper()
	var h *helpRequest
	if err := commands[name]().Run(context.Background(), []string{"-h"}); !errors.As(err, &h) {
		t.Fatalf("%s -h: %v, not a help request", name, err)
	}
	return h.fs
}

// TestFlagHelpComesFromDefinitions: every defined flag is in its
// command's help, with its usage; no help names a flag that is not defined
// (flags of other commands, in quoted 'clefcheck CMD ...' examples, aside).
func TestFlagHelpComesFromDefinitions(t *testing.T) {
	named := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	example := regexp.MustCompile(`'clefcheck [^']*'`)
	for name := range commands {
		fs := flagSetOf(t, name)
		help, _ := commandHelp(name)
		section := flagsSection(help)
		defined := map[string]bool{"help": true}
		fs.VisitAll(func(f *flag.Flag) {
			defined[f.Name] = true
			if f.Usage == "" {
				t.Errorf("%s --%s has no usage text", name, f.Name)
			}
			if !regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(f.Name) + `\b`).MatchString(section) {
				t.Errorf("%s: --%s is defined but not in the help:\n%s", name, f.Name, section)
			}
		})
		for _, m := range named.FindAllString(example.ReplaceAllString(help, ""), -1) {
			if !defined[strings.TrimPrefix(m, "--")] {
				t.Errorf("%s: the help names %s, which %s does not define", name, m, name)
			}
		}
		// The hand-written part lists no flags of its own.
		if strings.Count(help, "\nFlags:\n") != 1 {
			t.Errorf("%s: the help has %d flag sections", name, strings.Count(help, "\nFlags:\n"))
		}
	}
}

// goSyntax is what fmt prints for Go values that a reader should never
// see: maps, slices, structs, pointers, nil, bad verbs, and "(s)" plurals.
var goSyntax = []*regexp.Regexp{
	regexp.MustCompile(`map\[`),
	regexp.MustCompile(`\[\]`),
	regexp.MustCompile(`\[[^\]\s,]+( [^\]\s,]+)+\]`), // [a b c]
	regexp.MustCompile(`&\{|\{[^{}]*:[^{}]*\}`),      // &{...}, {A:1}
	regexp.MustCompile(`<nil>|%!|\(s\)`),
}

// singularPlural finds "1 findings" and the like.
var singularPlural = regexp.MustCompile(`\b1 (findings|files|records|pairs|tensors|modules|parameters|matrices|layers|bytes)\b`)

func proseOnly(t *testing.T, what, out string) {
	t.Helper()
	if out == "" {
		t.Errorf("%s printed nothing", what)
	}
	for _, re := range goSyntax {
		if m := re.FindString(out); m != "" {
			t.Errorf("%s prints Go syntax %q:\n%s", what, m, out)
		}
	}
	if m := singularPlural.FindString(out); m != "" {
		t.Errorf("%s prints %q:\n%s", what, m, out)
	}
	if strings.Contains(out, "\033[") {
		t.Errorf("%s colours output that is not a terminal", what)
	}
}

// TestTextOutputIsProse: every command's text output on the demo world —
// passing and failing — has no Go syntax and its plurals right.
func TestTextOutputIsProse(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	ad, base, tuned := filepath.Join(dir, "adapter"), filepath.Join(dir, "base"), filepath.Join(dir, "tuned")
	capture := t.TempDir()
	recs := filepath.Join(worldDir, "records", "arc-mini.jsonl")
	for _, args := range [][]string{
		{"audit", "--claims", "demo", "--matrices", "--base", base, "--tuned", tuned, ad},
		{"audit", "--quick", ad},
		{"rebuild", "--no-progress", "--base", base, "--tuned", tuned, ad},
		{"claims"},
		{"decide", "--no-progress", "--hidden", "--server", serve(t, "nvfp4", ""), "--records", recs, "--reference", filepath.Join(worldDir, "reference"), "--out", capture},
		{"hidden", filepath.Join(worldDir, "reference", "hidden"), filepath.Join(capture, "hidden")},
		{"answers", "--records", recs, filepath.Join(worldDir, "reference", "answers"), filepath.Join(capture, "answers")},
		{"audit", filepath.Join(dir, "nope")},
		{"world", filepath.Join(t.TempDir(), "w")},
	} {
		_, out, _ := cli(t, args...)
		proseOnly(t, strings.Join(args[:1], " "), out)
	}
	// A failing audit: its findings read as prose too.
	os.WriteFile(filepath.Join(ad, "adapter_config.json"), []byte(`{"r":16,"lora_alpha":16,"use_dora":true}`), 0o644)
	code, out, _ := cli(t, "audit", ad)
	if code != 1 || !strings.Contains(out, "verdict: FAIL") {
		t.Errorf("failing audit: exit %d\n%s", code, out)
	}
	proseOnly(t, "failing audit", out)
}

// TestPlurals: counts carry their noun in the right number.
func TestPlurals(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{count(0, "finding"), "0 findings"}, {count(1, "finding"), "1 finding"}, {count(2, "finding"), "2 findings"},
		{count(1, "file"), "1 file"}, {count(1, "matrix", "matrices"), "1 matrix"}, {count(3, "matrix", "matrices"), "3 matrices"},
		{count(700366848, "parameter"), "700,366,848 parameters"}, {group(-1234), "-1,234"}, {group(999), "999"},
		{size(815), "815 B"}, {size(1154984), "1.15 MB"}, {size(1_403_000_000), "1.4 GB"},
		{tally(map[string]int{"F32": 4, "BF16": 372}), "BF16 (372), F32 (4)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	var b bytes.Buffer
	printFindings(&b, []report.Finding{{Code: "rank.deficient", Severity: report.Info, Subject: "s", Message: "m"}})
	if !strings.Contains(b.String(), "1 finding: 1 info\n") {
		t.Errorf("one finding:\n%s", b.String())
	}
	b.Reset()
	printFindings(&b, nil)
	if strings.TrimSpace(b.String()) != "no findings" {
		t.Errorf("no findings:\n%s", b.String())
	}
}

// TestColor: colour only on a terminal (a character device) and never
// with NO_COLOR set, unless --color always asks for it; the verdict's word
// is there either way.
func TestColor(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	ad := filepath.Join(dir, "adapter")
	t.Setenv("NO_COLOR", "")
	t.Setenv("TERM", "xterm-256color")
	for _, c := range []struct {
		args    []string
		noColor string
		want    bool
	}{
		{[]string{"audit", ad}, "", false}, // stdout is not a terminal
		{[]string{"audit", "--color", "auto", ad}, "", false},
		{[]string{"audit", "--color", "never", ad}, "", false},
		{[]string{"audit", ad}, "1", false},
		{[]string{"audit", "--color", "always", ad}, "", true},
		{[]string{"audit", "--color", "always", ad}, "1", true}, // the command line overrides NO_COLOR
	} {
		t.Setenv("NO_COLOR", c.noColor)
		code, out, _ := cli(t, c.args...)
		if code != 0 || strings.Contains(out, "\033[") != c.want || !strings.Contains(out, "PASS") {
			t.Errorf("%v NO_COLOR=%q: exit %d, coloured %v, want %v\n%q", c.args, c.noColor, code, !c.want, c.want, out)
		}
		if c.want && !strings.Contains(out, "verdict: \033[1;32mPASS\033[0m") {
			t.Errorf("the verdict is not green: %q", out)
		}
	}
	// A character device counts as a terminal, unless NO_COLOR or TERM=dumb.
	tty, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	for _, c := range []struct {
		noColor, term string
		want          bool
	}{{"", "xterm", true}, {"1", "xterm", false}, {"false", "xterm", false}, {"", "dumb", false}} {
		t.Setenv("NO_COLOR", c.noColor)
		t.Setenv("TERM", c.term)
		if got := colorOn("auto", tty); got != c.want {
			t.Errorf("NO_COLOR=%q TERM=%s on a character device: colour %v, want %v", c.noColor, c.term, got, c.want)
		}
	}
	if colorOn("auto", &bytes.Buffer{}) {
		t.Error("a buffer is coloured")
	}
	// Every verdict has its colour, and its word.
	for _, v := range []report.Verdict{report.VerdictPass, report.VerdictWarn, report.VerdictFail, report.VerdictError} {
		var b bytes.Buffer
		printVerdict(styled{Writer: &b, color: true}, v)
		if !strings.Contains(b.String(), "\033[1;"+palette[string(v)]+"m"+v.Label()+"\033[0m") {
			t.Errorf("%s: %q", v, b.String())
		}
	}
}

// TestBinaryConventions: the built program, as a shell runs it.
func TestBinaryConventions(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "clefcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	runBin := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return c.ProcessState.ExitCode(), out.String(), errb.String()
	}
	if code, out, errs := runBin(); code != 2 || out != "" || !strings.Contains(errs, "Usage:") {
		t.Errorf("no arguments: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, args := range [][]string{{"--help"}, {"help", "audit"}, {"serve", "-h"}, {"site", "--help"}} {
		if code, out, errs := runBin(args...); code != 0 || errs != "" || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if code, out, _ := runBin("--version"); code != 0 || !strings.HasPrefix(out, "clefcheck version ") {
		t.Errorf("--version: exit %d %q", code, out)
	}
	if code, out, errs := runBin("help", "nosuch"); code != 2 || out != "" || !strings.Contains(errs, "nosuch") {
		t.Errorf("help nosuch: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// Every command answers -h with its flags, in the order the help lists them.
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if code, out, _ := runBin(n, "-h"); code != 0 || !strings.Contains(out, "  -h, --help") {
			t.Errorf("%s -h: exit %d\n%s", n, code, out)
		}
	}
}
