package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// AnswersCommand compares answers with the reference answers.
type AnswersCommand struct{ stdout, stderr io.Writer }

func (c *AnswersCommand) Usage() string {
	return `Usage: clefcheck answers [flags] REF CAND

Compares the answers in CAND (a folder of <dataset>.jsonl answer files, e.g.
the answers/ written by 'clefcheck decide --out DIR') with those in REF
(reference/answers/): agreement of choices, max |Δlogit|, mean KL divergence
of the option probabilities, and with --records (records/<dataset>.jsonl)
the accuracy of both on the known answers. Every disagreement is an
answer.mismatch finding.

Exit status: 0 pass, 1 fail, 2 could not run.
`
}

func (c *AnswersCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("answers", c.Usage)
	asJSON := fs.Bool("json", false, "print one JSON object {verdict, findings, summary, records}")
	var records multiFlag
	fs.Var(&records, "records", "a records `FILE` (records/<dataset>.jsonl), to count the known answers both got right")
	color := colorFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return &UsageError{Msg: "give REF and CAND folders"}
	}
	host := newHost("")
	spec := &jobs.Spec{Kind: jobs.KindAnswers}
	if spec.Ref, err = input(host, "REF", pos[0]); err != nil {
		return err
	}
	if spec.Cand, err = input(host, "CAND", pos[1]); err != nil {
		return err
	}
	if len(records) > 0 {
		if spec.RecordFiles, err = files(host, "--records", records...); err != nil {
			return err
		}
	}
	out, err := runJob(ctx, spec, host, c.stderr, true)
	if err != nil {
		return err
	}
	res := out.Answers
	return done(c.stdout, *asJSON, *color, res, res.Outcome, func(w io.Writer) { printAnswers(w, res) })
}

func printAnswers(w io.Writer, res *report.Answers) {
	s := res.Summary
	if s.Answered == 0 { // no figures were measured
		fmt.Fprintf(w, "answers: %s in the reference, none answered\n", count(s.Records, "record"))
		printFindings(w, res.Findings)
		printVerdict(w, res.Verdict)
		return
	}
	fmt.Fprintf(w, "answers: %d of %s agree with the reference (%d answered); max |Δlogit| %.4g, mean KL %.3g nats\n", s.Agree, count(s.Records, "record"), s.Answered, s.MaxDLogit, s.MeanKL)
	if s.Known > 0 {
		fmt.Fprintf(w, "known answers: reference %d of %d right, candidate %d of %d\n", s.RefCorrect, s.Known, s.CandCorrect, s.Known)
	}
	printFindings(w, res.Findings)
	printVerdict(w, res.Verdict)
}
