package compare

import (
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"

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
			c.Addf(report.AnswerMismatch, report.Fail, id, a.Options, r.Options, "options differ: %v, the reference has %v", a.Options, r.Options)
		default:
			res.Summary.Answered++
			st.Cand = a.Choice
			st.Agree = a.Choice == r.Choice
			for i := range r.Logits {
				st.MaxDLogit = math.Max(st.MaxDLogit, math.Abs(a.Logits[i]-r.Logits[i]))
			}
			st.KL = kl(r.Probs, a.Probs)
			klSum += st.KL
			res.Summary.MaxDLogit = math.Max(res.Summary.MaxDLogit, st.MaxDLogit)
			if st.Known != "" && a.Choice == st.Known {
				res.Summary.CandCorrect++
			}
			if st.Agree {
				res.Summary.Agree++
			} else {
				st.Status = "disagree"
				c.Addf(report.AnswerMismatch, report.Fail, id, a.Choice, r.Choice, "chose %s, the reference chose %s (max |Δlogit| %.3g)", a.Choice, r.Choice, st.MaxDLogit)
			}
		}
		res.Records = append(res.Records, st)
	}
	if res.Summary.Answered > 0 {
		res.Summary.MeanKL = klSum / float64(res.Summary.Answered)
	}
	for id := range cand {
		if ref[id] == nil {
			c.Addf(report.AnswerMismatch, report.Info, id, nil, nil, "the candidate answered a record the reference does not have")
		}
	}
	res.Outcome = c.Outcome()
	return res
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
	for _, name := range names {
		f, err := fsys.Open(name)
		if err != nil {
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error()}
		}
		err = refs.ReadJSONL(f, name, func(line int, r *refs.Record) error {
			if r.ID == "" || len(r.Options) == 0 {
				return fmt.Errorf("a record needs an id and options")
			}
			if seen[r.ID] {
				return fmt.Errorf("id %s appears twice", r.ID)
			}
			if r.Answer != "" && !slices.Contains(r.Options, r.Answer) {
				return fmt.Errorf("record %s: known answer %q is not one of its options", r.ID, r.Answer)
			}
			seen[r.ID] = true
			out = append(out, *r)
			return nil
		})
		f.Close()
		if err != nil {
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error()}
		}
	}
	return out, nil
}
