package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

// DecideCommand sends records to a decision server.
type DecideCommand struct{ stdout, stderr io.Writer }

func (c *DecideCommand) Usage() string {
	return `Usage: clefcheck decide --server URL --records FILE... [flags]

Sends every record (records/<dataset>.jsonl) to the decision service at URL
(POST /v1/systemone), writes the answers — and with --hidden the hidden
states — in the reference layout, compares them with the reference, and
reports latency percentiles and throughput.

Flags:
  --server URL        the decision server's base URL
  --token T           bearer token
  --concurrency N     requests in flight (default 4)
  --timeout D         deadline per decision, retries included (default 60s)
  --records FILE|URL  a records file (repeatable), or one URL of a records file: an
                      http(s) URL (a raw GitHub file) or a Hub file (hf://owner/name/path.jsonl)
  --reference DIR|SRC the reference folder (with answers/ and hidden/) to compare with: a local
                      folder, a URL, or a Hub folder (hf://kvit-s/clef-lora-r256/reference)
  --out DIR           write DIR/answers/<dataset>.jsonl and DIR/hidden/<id>.safetensors
  --hidden            ask for hidden states (return_hidden) and compare them
  --json              print one JSON object {verdict, findings, summary, records}
  --no-progress       no progress on stderr

Exit status: 0 pass or warn, 1 fail (a record failed or disagrees), 2 could not run.
`
}

func (c *DecideCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("decide", c.Usage)
	server := fs.String("server", "", "")
	token := fs.String("token", "", "")
	conc := fs.Int("concurrency", 4, "")
	timeout := fs.Duration("timeout", 60*time.Second, "")
	var recFiles multiFlag
	fs.Var(&recFiles, "records", "")
	refDir := fs.String("reference", "", "")
	outDir := fs.String("out", "", "")
	hidden := fs.Bool("hidden", false, "")
	asJSON := fs.Bool("json", false, "")
	noProgress := fs.Bool("no-progress", false, "")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *server == "" || len(recFiles) == 0 || len(pos) > 0 {
		return &UsageError{Msg: "need --server URL and at least one --records FILE"}
	}
	if *conc < 1 || *conc > jobs.MaxConcurrency {
		return &UsageError{Msg: fmt.Sprintf("--concurrency must be 1–%d", jobs.MaxConcurrency)}
	}
	host := newHost(*outDir)
	spec := &jobs.Spec{Kind: jobs.KindDecisions, Server: *server, Token: *token, Concurrency: *conc, Timeout: *timeout,
		Hidden: *hidden, Save: *outDir != ""}
	if spec.RecordFiles, err = recordsInput(host, recFiles); err != nil {
		return err
	}
	if *refDir != "" {
		if spec.Ref, err = input(host, "--reference", *refDir); err != nil {
			return err
		}
	}
	out, err := runJob(ctx, spec, host, c.stderr, *noProgress)
	if err != nil {
		return err
	}
	res := out.Decisions
	return done(c.stdout, *asJSON, res, res.Outcome, func(w io.Writer) { printDecide(w, res) })
}

func printDecide(w io.Writer, res *report.Decisions) {
	s := res.Summary
	fmt.Fprintf(w, "decisions from %s: %d of %d answered, %d failed, in %.2f s\n", s.Server, s.Answered, s.Records, s.Failed, s.Seconds)
	for _, r := range res.Records {
		if r.Status == report.Failed {
			fmt.Fprintf(w, "  failed: %s: %s\n", r.ID, report.Clip(r.Error, 200))
		}
	}
	if l := s.Latency; s.Answered > 0 {
		fmt.Fprintf(w, "latency: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; %.1f decisions/s\n", l.P50, l.P90, l.P99, l.Max, l.Throughput)
	}
	if a := s.Answers; a != nil {
		fmt.Fprintf(w, "agreement with the reference: %d of %d; max |Δlogit| %.4g, mean KL %.3g nats\n", a.Agree, a.Records, a.MaxDLogit, a.MeanKL)
		if a.Known > 0 {
			fmt.Fprintf(w, "known answers: reference %d of %d right, server %d of %d\n", a.RefCorrect, a.Known, a.CandCorrect, a.Known)
		}
	}
	if h := s.Hidden; h != nil {
		fmt.Fprintf(w, "hidden states: %d compared, %d beyond tolerance; worst cosine %.6f, worst rel. L2 %.4g\n", h.Compared, h.Failed, h.MinCosine, h.MaxRelL2)
	}
	printFindings(w, res.Findings)
	fmt.Fprintf(w, "\nverdict: %s\n", res.Verdict.Label())
}

// recordsInput is --records: local files, or one file by URL or on the Hub.
func recordsInput(host *runner.Native, vals []string) (*jobs.Input, error) {
	remote := 0
	for _, v := range vals {
		if strings.Contains(v, "://") {
			remote++
		}
	}
	switch {
	case remote == 0:
		return files(host, "--records", vals...)
	case len(vals) > 1:
		return nil, &UsageError{Msg: "--records: give one URL, or local files"}
	}
	in, err := host.FileSource(vals[0])
	if err != nil {
		return nil, &UsageError{Msg: "--records: " + err.Error()}
	}
	return in, nil
}
