package main

import (
	"context"
	"encoding/json"
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

Exit status: 0 pass or warn, 1 fail (a record failed or disagrees), 2 could not run.
`
}

func (c *DecideCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("decide", c.Usage)
	server := fs.String("server", "", "the decision server's base `URL`")
	token := fs.String("token", "", "bearer `TOKEN` sent to the server")
	conc := fs.Int("concurrency", 4, "requests in flight")
	timeout := fs.Duration("timeout", 60*time.Second, "deadline per decision, retries included, e.g. 90s")
	var recFiles multiFlag
	fs.Var(&recFiles, "records", "a records `FILE|URL`: local files, or one URL of a records file, http(s) (a raw GitHub file) or on the Hub (hf://owner/name/path.jsonl)")
	refDir := fs.String("reference", "", "the reference folder `DIR|URL` (with answers/ and hidden/) to compare with: a local folder, a URL, or a Hub folder (hf://kvit-s/clef-lora-r256/reference)")
	claimsName := fs.String("claims", "", "without --reference, compare with the references the built-in profile `NAME` names (clef-lora-r256: hf://kvit-s/clef-lora-r256/reference, at HF_ENDPOINT)")
	outDir := fs.String("out", "", "write `DIR`/answers/<dataset>.jsonl and DIR/hidden/<id>.safetensors")
	hidden := fs.Bool("hidden", false, "ask for hidden states (return_hidden) and compare them")
	asJSON := fs.Bool("json", false, "print one JSON object {verdict, findings, summary, records}")
	noProgress := fs.Bool("no-progress", false, "no progress on stderr")
	color := colorFlag(fs)
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
	if *refDir == "" && *claimsName != "" {
		if *refDir, err = referenceOf(ctx, *claimsName); err != nil {
			return err
		}
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
	return done(c.stdout, *asJSON, *color, res, res.Outcome, func(w io.Writer) { printDecide(w, res) })
}

func printDecide(w io.Writer, res *report.Decisions) {
	s := res.Summary
	fmt.Fprintf(w, "decisions from %s: %d of %s answered, %d failed, in %.2f s\n", s.Server, s.Answered, count(s.Records, "record"), s.Failed, s.Seconds)
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
	printVerdict(w, res.Verdict)
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

// referenceOf is where a built-in claims profile says its references live.
func referenceOf(ctx context.Context, name string) (string, error) {
	out, err := runner.Run(ctx, &jobs.Spec{Kind: jobs.KindClaims, Claims: name}, runner.Host{Open: noInputs}, nil)
	if err != nil {
		return "", &UsageError{Msg: "--claims: " + err.Error()}
	}
	var p struct {
		Reference struct {
			Source string `json:"source"`
		} `json:"reference"`
	}
	if err := json.Unmarshal(out.ClaimsJSON, &p); err != nil || p.Reference.Source == "" {
		return "", &UsageError{Msg: fmt.Sprintf("--claims %s names no references (give --reference)", name)}
	}
	return p.Reference.Source, nil
}
