package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
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
  --records FILE      a records file (repeatable)
  --reference DIR     the reference folder (with answers/ and hidden/) to compare with
  --out DIR           write DIR/answers/<dataset>.jsonl and DIR/hidden/<id>.safetensors
  --hidden            ask for hidden states (return_hidden) and compare them
  --json              print one JSON object {verdict, findings, summary, records}
  --no-progress       no progress on stderr

Exit status: 0 pass or warn, 1 fail (a record failed or disagrees), 2 could not run.
`
}

// decideRecord is one line of the report.
type decideRecord struct {
	ID        string  `json:"id"`
	Status    string  `json:"status"` // answered | failed
	Choice    string  `json:"choice,omitempty"`
	Reference string  `json:"reference,omitempty"`
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
}

type decideSummary struct {
	Server   string                  `json:"server"`
	Records  int                     `json:"records"`
	Answered int                     `json:"answered"`
	Failed   int                     `json:"failed"`
	Latency  decision.Latency        `json:"latency"`
	Seconds  float64                 `json:"seconds"`
	Agree    *int                    `json:"agree,omitempty"`
	Answers  *compare.AnswersSummary `json:"answers,omitempty"`
	Hidden   *compare.HiddenSummary  `json:"hidden,omitempty"`
}

type decideResult struct {
	Verdict  report.Verdict   `json:"verdict"`
	Findings []report.Finding `json:"findings"`
	Summary  decideSummary    `json:"summary"`
	Records  []decideRecord   `json:"records"`
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
	if *conc < 1 || *conc > 256 {
		return &UsageError{Msg: "--concurrency must be 1–256"}
	}
	var recs []refs.Record
	for _, f := range recFiles {
		rs, err := compare.ReadRecords(source.Dir(filepath.Dir(f)), filepath.Base(f))
		if err != nil {
			return &UsageError{Msg: err.Error()}
		}
		recs = append(recs, rs...)
	}
	client := &decision.Client{BaseURL: *server, Token: *token, Timeout: *timeout}
	if _, err := client.Endpoint(); err != nil {
		return &UsageError{Msg: err.Error()}
	}
	prog := newProgressPrinter(c.stderr, *noProgress)
	start := time.Now()
	outs := decision.Run(ctx, client, recs, decision.RunOptions{Concurrency: *conc, Hidden: *hidden, Progress: prog.report})
	wall := time.Since(start)
	prog.done()

	res := &decideResult{Summary: decideSummary{Server: *server, Records: len(recs), Seconds: wall.Seconds(), Latency: decision.Latencies(outs, wall)}}
	var col report.Collector
	cand := map[string]*refs.Answer{}
	byDataset := map[string][]*refs.Answer{}
	hiddenDir := ""
	if *hidden {
		hiddenDir = filepath.Join(*outDir, "hidden")
		if *outDir == "" {
			tmp, err := os.MkdirTemp("", "clefcheck-hidden-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			hiddenDir = tmp
		}
	}
	for _, o := range outs {
		dr := decideRecord{ID: o.Record.ID, LatencyMS: float64(o.Latency.Microseconds()) / 1000}
		if o.Err != nil {
			dr.Status, dr.Error = "failed", o.Err.Error()
			res.Summary.Failed++
			col.Addf("decision.failed", report.Fail, o.Record.ID, nil, nil, "%v", o.Err)
		} else {
			dr.Status, dr.Choice = "answered", o.Resp.Choice
			res.Summary.Answered++
			a := o.Answer()
			cand[a.ID] = a
			byDataset[o.Record.Dataset] = append(byDataset[o.Record.Dataset], a)
			if *hidden {
				h, err := o.HiddenStates()
				if err != nil {
					col.Addf("decision.failed", report.Fail, o.Record.ID, nil, nil, "hidden states: %v", err)
				} else {
					var buf bytes.Buffer
					if err := h.Encode(&buf, "F32"); err != nil {
						return err
					}
					if err := writeFile(filepath.Join(hiddenDir, refs.FileName(a.ID)), buf.Bytes()); err != nil {
						return err
					}
				}
			}
		}
		res.Records = append(res.Records, dr)
	}
	if *outDir != "" {
		for ds, as := range byDataset {
			var buf bytes.Buffer
			if err := refs.WriteAnswers(&buf, as); err != nil {
				return err
			}
			if err := writeFile(filepath.Join(*outDir, "answers", ds+".jsonl"), buf.Bytes()); err != nil {
				return err
			}
		}
	}
	if *refDir != "" {
		ref, err := refs.ReadAnswers(source.Dir(filepath.Join(*refDir, "answers")), ".")
		if err != nil {
			return &UsageError{Msg: fmt.Sprintf("--reference: %v", err)}
		}
		known := map[string]string{}
		inRun := map[string]bool{}
		for _, r := range recs {
			inRun[r.ID] = true
			if r.Answer != "" {
				known[r.ID] = r.Answer
			}
		}
		for id := range ref { // compare only the records sent
			if !inRun[id] {
				delete(ref, id)
			}
		}
		ar := compare.Answers(ref, cand, known)
		res.Summary.Answers, res.Summary.Agree = &ar.Summary, &ar.Summary.Agree
		for i := range res.Records {
			if a := ref[res.Records[i].ID]; a != nil {
				res.Records[i].Reference = a.Choice
			}
		}
		for _, f := range ar.Findings {
			if f.Message != "no candidate answer for this record" { // already a decision.failed
				col.Add(f)
			}
		}
		if *hidden {
			hr, err := compare.Hidden(source.Dir(filepath.Join(*refDir, "hidden")), ".", source.Dir(hiddenDir), ".", compare.HiddenTol{})
			if err != nil {
				return &UsageError{Msg: fmt.Sprintf("--reference: %v", err)}
			}
			res.Summary.Hidden = &hr.Summary
			for _, f := range hr.Findings {
				if f.Severity != report.Info && !strings.Contains(f.Message, "has no hidden states") {
					col.Add(f)
				}
			}
		}
	}
	res.Findings, res.Verdict = col.Finish()
	sort.SliceStable(res.Records, func(i, j int) bool { return res.Records[i].Status == "failed" && res.Records[j].Status != "failed" })
	if *asJSON {
		if err := writeJSON(c.stdout, res); err != nil {
			return err
		}
	} else {
		printDecide(c.stdout, res)
	}
	if res.Verdict == "fail" {
		return &FailedError{Verdict: res.Verdict}
	}
	return nil
}

func printDecide(w io.Writer, res *decideResult) {
	s := res.Summary
	fmt.Fprintf(w, "decisions from %s: %d of %d answered, %d failed, in %.2f s\n", s.Server, s.Answered, s.Records, s.Failed, s.Seconds)
	l := s.Latency
	fmt.Fprintf(w, "latency: p50 %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; %.1f decisions/s\n", l.P50, l.P90, l.P99, l.Max, l.Throughput)
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
