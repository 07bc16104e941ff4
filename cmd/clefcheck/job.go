package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

// Every subcommand that checks something is flags → a jobs.Spec →
// runner.Run on a native host → the job's output printed as text or, with
// --json, as the same JSON the pages download.

// runJob runs spec with the inputs attached to host, showing progress on
// stderr unless quiet.
func runJob(ctx context.Context, spec *jobs.Spec, host *runner.Native, stderr io.Writer, quiet bool) (*jobs.Output, error) {
	prog := newProgressPrinter(stderr, quiet)
	defer prog.done()
	return runner.Run(ctx, spec, host.Host(), func(e jobs.Event) {
		if e.Status != nil {
			prog.report(*e.Status)
		}
		if e.Plan != nil { // what a rebuild will read, before it starts
			prog.line(e.Plan.String())
		}
	})
}

// newHost is the native host: Hub sources at HF_ENDPOINT (as
// huggingface_hub reads it) with HF_TOKEN, written files under outDir.
func newHost(outDir string) *runner.Native {
	return &runner.Native{OutDir: outDir, Endpoint: os.Getenv("HF_ENDPOINT"), Token: os.Getenv("HF_TOKEN")}
}

// input attaches a command-line source (a folder or URL) for flag (or
// argument) what; a missing or unreadable one is a usage error.
func input(host *runner.Native, what, s string) (*jobs.Input, error) {
	in, err := host.Source(s)
	if err != nil {
		return nil, &UsageError{Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	return in, nil
}

// files attaches local files for flag what.
func files(host *runner.Native, what string, paths ...string) (*jobs.Input, error) {
	in, err := host.Files(paths...)
	if err != nil {
		return nil, &UsageError{Msg: fmt.Sprintf("%s: %v", what, err)}
	}
	return in, nil
}

// claimsSpec sets a --claims value on spec: a built-in profile's name, or
// a file (the engine reads and checks it).
func claimsSpec(host *runner.Native, spec *jobs.Spec, v string) error {
	if v == "" {
		return nil
	}
	if isBuiltin(v) {
		spec.Claims = v
		return nil
	}
	if st, err := os.Stat(v); err != nil || !st.Mode().IsRegular() {
		return &UsageError{Msg: fmt.Sprintf("--claims %s: neither a built-in profile (%s) nor a readable file", v, strings.Join(builtinNames(), ", "))}
	}
	in, err := files(host, "--claims", v)
	if err != nil {
		return err
	}
	spec.ClaimsFile = in
	return nil
}

func noInputs(*jobs.Input) (fs.FS, error) { return nil, errors.New("no inputs here") }

// builtinNames lists the engine's built-in claims profiles.
func builtinNames() []string {
	out, err := runner.Run(context.Background(), &jobs.Spec{Kind: jobs.KindClaims}, runner.Host{Open: noInputs}, nil)
	if err != nil {
		return nil
	}
	return out.ClaimNames
}

func isBuiltin(name string) bool {
	for _, n := range builtinNames() {
		if n == name {
			return true
		}
	}
	return false
}

// done prints out (JSON or text, coloured as color says) and maps its
// verdict to the exit status.
func done(w io.Writer, asJSON bool, color colorMode, v any, o report.Outcome, text func(io.Writer)) error {
	if asJSON {
		if err := writeJSON(w, v); err != nil {
			return err
		}
	} else {
		text(styled{Writer: w, color: colorOn(color, w)})
	}
	if o.Verdict.Exit() != 0 {
		return &FailedError{Verdict: o.Verdict}
	}
	return nil
}

// writeJSON prints v as indented JSON; a figure that is not finite is
// printed as null rather than breaking the output (report.JSON).
func writeJSON(w io.Writer, v any) error {
	data, err := report.JSON(v)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, data, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = w.Write(buf.Bytes())
	return err
}
