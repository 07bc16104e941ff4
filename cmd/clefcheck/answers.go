package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// AnswersCommand compares answers with the reference answers.
type AnswersCommand struct{ stdout, stderr io.Writer }

func (c *AnswersCommand) Usage() string {
	return `Usage: clefcheck answers [--json] [--records FILE...] REF CAND

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
	asJSON := fs.Bool("json", false, "")
	var records multiFlag
	fs.Var(&records, "records", "")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return &UsageError{Msg: "give REF and CAND folders"}
	}
	ref, err := refs.ReadAnswers(source.Dir(pos[0]), ".")
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	cand, err := refs.ReadAnswers(source.Dir(pos[1]), ".")
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	known, err := knownAnswers(records)
	if err != nil {
		return err
	}
	res := compare.Answers(ref, cand, known)
	if *asJSON {
		if err := writeJSON(c.stdout, res); err != nil {
			return err
		}
	} else {
		printAnswers(c.stdout, res)
	}
	if res.Verdict == "fail" {
		return &FailedError{Verdict: res.Verdict}
	}
	return nil
}

func knownAnswers(files []string) (map[string]string, error) {
	known := map[string]string{}
	for _, f := range files {
		recs, err := compare.ReadRecords(source.Dir(filepath.Dir(f)), filepath.Base(f))
		if err != nil {
			return nil, &UsageError{Msg: err.Error()}
		}
		for _, r := range recs {
			if r.Answer != "" {
				known[r.ID] = r.Answer
			}
		}
	}
	return known, nil
}

func printAnswers(w io.Writer, res *compare.AnswersResult) {
	s := res.Summary
	fmt.Fprintf(w, "answers: %d of %d records agree with the reference (%d answered); max |Δlogit| %.4g, mean KL %.3g nats\n", s.Agree, s.Records, s.Answered, s.MaxDLogit, s.MeanKL)
	if s.Known > 0 {
		fmt.Fprintf(w, "known answers: reference %d of %d right, candidate %d of %d\n", s.RefCorrect, s.Known, s.CandCorrect, s.Known)
	}
	printFindings(w, res.Findings)
	fmt.Fprintf(w, "\nverdict: %s\n", res.Verdict.Label())
}

// writeFile writes data to path, creating its folder.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
