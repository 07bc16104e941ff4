package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// AnswerStats is report.AnswerStats.
type AnswerStats = report.AnswerStats

// AnswersSummary is report.AnswersSummary.
type AnswersSummary = report.AnswersSummary

// AnswersResult is report.Answers.
type AnswersResult = report.Answers

// Answers compares candidate answers with reference answers; known maps
// record ids to known answers (may be nil).
func Answers(ref, cand map[string]*refs.Answer, known map[string]string) *AnswersResult {
	res := &AnswersResult{}
	var c report.Collector
	ids := make([]string, 0, len(ref))
	for id := range ref {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var klSum float64
	for _, id := range ids {
		r := ref[id]
		st := AnswerStats{ID: id, Ref: r.Choice, Known: known[id], Status: "ok"}
		res.Summary.Records++
		if st.Known != "" {
			res.Summary.Known++
			if r.Choice == st.Known {
				res.Summary.RefCorrect++
			}
		}
		a, ok := cand[id]
		switch {
		case !ok:
			st.Status = "missing"
			c.Addf(report.AnswerMismatch, report.Fail, id, nil, r.Choice, "no candidate answer for this record")
		case !slices.Equal(r.Options, a.Options):
			st.Status = "options"
			c.Addf(report.AnswerMismatch, report.Fail, id, len(a.Options), len(r.Options), "options differ: %s, the reference has %s", clipList(a.Options), clipList(r.Options))
		case len(a.Logits) != len(r.Logits) || len(a.Probs) != len(r.Probs):
			st.Status = "options"
			c.Addf(report.AnswerMismatch, report.Fail, id, len(a.Logits), len(r.Logits), "%d logits and %d probabilities for %d options", len(a.Logits), len(a.Probs), len(r.Options))
		default:
			res.Summary.Answered++
			st.Cand = a.Choice
			st.Agree = a.Choice == r.Choice
			if err := refs.CheckDistribution(a.Probs); err != nil {
				c.Addf(report.AnswerMismatch, report.Fail, id, sum(a.Probs), 1.0, "the candidate's probabilities are not a distribution: %v", err)
			}
			if err := refs.CheckDistribution(r.Probs); err != nil {
				c.Addf(report.AnswerMismatch, report.Fail, id, sum(r.Probs), 1.0, "the reference's probabilities are not a distribution (read references with refs.ReadReferenceAnswers): %v", err)
			}
			for i := range r.Logits {
				st.MaxDLogit = math.Max(st.MaxDLogit, math.Abs(a.Logits[i]-r.Logits[i]))
			}
			st.KL = kl(r.Probs, a.Probs)
			if !finite(st.MaxDLogit) || !finite(st.KL) {
				// ±1.7e308 logits differ by more than float64 holds; JSON has
				// no infinity, so the figure is the largest float64.
				c.Addf(report.AnswerMismatch, report.Fail, id, nil, nil, "the logits' difference (or the KL divergence) is not finite in float64: the candidate's logits or probabilities are out of range")
				st.MaxDLogit, st.KL = finiteOr(st.MaxDLogit), finiteOr(st.KL)
			}
			klSum += st.KL
			res.Summary.MaxDLogit = math.Max(res.Summary.MaxDLogit, st.MaxDLogit)
			if st.Known != "" && a.Choice == st.Known {
				res.Summary.CandCorrect++
			}
			if st.Agree {
				res.Summary.Agree++
			} else {
				st.Status = "disagree"
				c.Addf(report.AnswerMismatch, report.Fail, id, report.Clip(a.Choice, 80), report.Clip(r.Choice, 80), "chose %s, the reference chose %s (max |Δlogit| %.3g)", report.Clip(a.Choice, 80), report.Clip(r.Choice, 80), st.MaxDLogit)
			}
		}
		res.Records = append(res.Records, st)
	}
	if res.Summary.Answered > 0 {
		res.Summary.MeanKL = finiteOr(klSum / float64(res.Summary.Answered))
	}
	for id := range cand {
		if ref[id] == nil {
			c.Addf(report.AnswerMismatch, report.Info, id, nil, nil, "the candidate answered a record the reference does not have")
		}
	}
	res.Outcome = c.Outcome()
	return res
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// finiteOr is x, or the largest float64 when x is not finite (JSON has no
// infinity; a NaN figure means "as bad as it gets" here too).
func finiteOr(x float64) float64 {
	if finite(x) {
		return x
	}
	return math.MaxFloat64
}

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return finiteOr(s)
}

// kl is KL(p ‖ q) in nats, with q floored at 1e-12.
func kl(p, q []float64) float64 {
	var s float64
	for i := range p {
		if p[i] > 0 {
			s += p[i] * math.Log(p[i]/math.Max(q[i], 1e-12))
		}
	}
	return math.Max(0, s)
}

// ReadRecords reads records/<dataset>.jsonl files (FORMATS §4).
func ReadRecords(fsys fs.FS, names ...string) ([]refs.Record, error) {
	var out []refs.Record
	seen := map[string]bool{}
	budget := refs.NewBudget() // the files of one batch share the limits
	for _, name := range names {
		f, err := fsys.Open(name)
		if err != nil {
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error()}
		}
		err = refs.ReadJSONLBudget(f, name, budget, func(line int, r *refs.Record) error {
			if r.ID == "" || len(r.Options) == 0 {
				return fmt.Errorf("a record needs an id and options")
			}
			if len(r.Options) > refs.MaxOptions {
				return &report.Error{Code: report.LimitExceeded, Subject: name, Msg: fmt.Sprintf("record %s has %d options, more than %d (refs.MaxOptions)", report.Clip(r.ID, 80), len(r.Options), refs.MaxOptions)}
			}
			if seen[r.ID] {
				return fmt.Errorf("id %s appears twice", report.Clip(r.ID, 80))
			}
			if r.Answer != "" && !slices.Contains(r.Options, r.Answer) {
				return fmt.Errorf("record %s: known answer %q is not one of its options", report.Clip(r.ID, 80), report.Clip(r.Answer, 60))
			}
			seen[r.ID] = true
			out = append(out, *r)
			return nil
		})
		f.Close()
		if err != nil {
			var e *report.Error
			if errors.As(err, &e) && e.Code == report.LimitExceeded {
				return nil, e
			}
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error()}
		}
	}
	return out, nil
}

// clipList shows a list from a file, clipped.
func clipList(xs []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range xs {
		if i == 8 {
			fmt.Fprintf(&b, " … %d more", len(xs)-8)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Quote(report.Clip(x, 40)))
	}
	b.WriteByte(']')
	return b.String()
}
