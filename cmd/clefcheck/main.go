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

func usage() string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return fmt.Sprintf(`clefcheck verifies LoRA adapters extracted by SVD, and the claims made for them.

Usage:
	clefcheck <command> [arguments]

Commands:
	%s

Run 'clefcheck <command> -h' for a command's flags.
`, strings.Join(names, "\n\t"))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run maps errors to exit codes; it is the only place that does.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage())
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	mk, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "clefcheck: unknown command %q\n\n%s", args[0], usage())
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
		fmt.Fprint(stderr, cmd.Usage())
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "clefcheck %s: %s\n\n%s", args[0], ue.Msg, cmd.Usage())
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
				return nil, err
			}
			return nil, &UsageError{Msg: err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
