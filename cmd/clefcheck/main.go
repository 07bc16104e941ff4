// Command clefcheck verifies a PEFT LoRA adapter extracted from a fine-tune
// by SVD — kvit-s/clef-lora-r256 and others — and the demo world it ships.
//
// Exit status: 0 when the verdict is pass or warn, 1 when it is fail, 2 when
// the command could not run (bad flags, nothing to read).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Command is one subcommand.
type Command interface {
	Run(ctx context.Context, args []string) error
	Usage() string
}

var commands = map[string]func() Command{
	"audit":     func() Command { return &AuditCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"rebuild":   func() Command { return &RebuildCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"world":     func() Command { return &WorldCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"claims":    func() Command { return &ClaimsCommand{stdout: os.Stdout} },
	"hidden":    func() Command { return &HiddenCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"answers":   func() Command { return &AnswersCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"decide":    func() Command { return &DecideCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"decisiond": func() Command { return &DecisiondCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"proxy":     func() Command { return &ProxyCommand{stdout: os.Stdout, stderr: os.Stderr} },
	"badge":     func() Command { return &BadgeCommand{stdout: os.Stdout} },
}

// UsageError is a mistake in how the command was called (exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// FailedError means the check ended with a verdict that is not a pass:
// fail (exit 1) or error, it could not be completed (exit 2).
type FailedError struct{ Verdict report.Verdict }

func (e *FailedError) Error() string { return "verdict: " + string(e.Verdict) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run maps errors to exit codes; it is the only place that does. Help
// asked for goes to stdout (exit 0); a usage error goes to stderr with the
// usage (exit 2).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topHelp())
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help", "-help":
		return help(args[0], args[1:], stdout, stderr)
	case "version", "--version", "-version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "clefcheck %s: takes no arguments\n\nUsage: clefcheck --version\n", args[0])
			return 2
		}
		fmt.Fprint(stdout, versionLine())
		return 0
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "clefcheck: unknown flag %s (flags go after the command)\n\n%s", args[0], topHelp())
		return 2
	}
	mk, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "clefcheck: unknown command %q%s\n\n%s", args[0], suggest(args[0]), topHelp())
		return 2
	}
	cmd := mk()
	err := cmd.Run(ctx, args[1:])
	var ue *UsageError
	var fe *FailedError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		h, _ := commandHelp(args[0])
		fmt.Fprint(stdout, h)
		return 0
	case errors.As(err, &ue):
		h, _ := commandHelp(args[0])
		fmt.Fprintf(stderr, "clefcheck %s: %s\n\n%s%s\nRun 'clefcheck help %s' for the details.\n", args[0], ue.Msg, synopsis(h), flagsSection(h), args[0])
		jsonError(stdout, args, report.Could(report.CheckInvalid, "clefcheck "+args[0], "%s (see clefcheck %s -h)", ue.Msg, args[0]))
		return 2
	case errors.As(err, &fe):
		return fe.Verdict.Exit()
	default:
		fmt.Fprintf(stderr, "clefcheck %s: %v\n", args[0], err)
		jsonError(stdout, args, report.ErrorOf(err, "clefcheck "+args[0]))
		return 2
	}
}

// help is 'clefcheck help [CMD]' (or --help, -h): the top-level help or
// a command's, on stdout; an unknown command is a usage error.
func help(how string, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0 || args[0] == "help":
		fmt.Fprint(stdout, topHelp())
		return 0
	case len(args) > 1:
		fmt.Fprintf(stderr, "clefcheck %s: give at most one command\n\nUsage: clefcheck help [command]\n", how)
		return 2
	case args[0] == "version":
		fmt.Fprint(stdout, "Usage: clefcheck version (or clefcheck --version)\n\nPrints clefcheck's module version, the VCS revision it was built from, and\nthe Go version.\n")
		return 0
	}
	h, ok := commandHelp(args[0])
	if !ok {
		fmt.Fprintf(stderr, "clefcheck %s: unknown command %q%s\n\n%s", how, args[0], suggest(args[0]), topHelp())
		return 2
	}
	fmt.Fprint(stdout, h)
	return 0
}

// suggest names the commands close to a mistyped one, as gh does.
func suggest(name string) string {
	var near []string
	for c := range commands {
		if d := distance(name, c); d <= 2 || (len(name) >= 3 && strings.HasPrefix(c, name)) {
			near = append(near, c)
		}
	}
	if len(near) == 0 {
		return ""
	}
	sort.Strings(near)
	return "\n\nDid you mean this?\n\t" + strings.Join(near, "\n\t")
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// jsonError prints, when the command was asked for JSON, the one JSON
// object it owes even when it could not run: verdict error and why.
func jsonError(stdout io.Writer, args []string, f report.Finding) {
	for _, a := range args {
		if a == "--json" || a == "-json" || a == "--json=true" || a == "-json=true" {
			writeJSON(stdout, report.Outcome{Verdict: report.VerdictError, Findings: []report.Finding{f}})
			return
		}
	}
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name string, usage func() string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parse parses flags that may come before or after the positional
// arguments, and wraps mistakes as usage errors.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, &helpRequest{fs: fs}
			}
			return nil, &UsageError{Msg: flagMistake(err)}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagMistake rewords the flag package's errors with the flags spelled as
// the help spells them: "unknown flag --bogus", "--workers needs a value".
func flagMistake(err error) string {
	msg := err.Error()
	if n, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(n, "-")
	}
	if n, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + strings.TrimPrefix(n, "-") + " needs a value"
	}
	return strings.Replace(msg, " for flag -", " for --", 1)
}
