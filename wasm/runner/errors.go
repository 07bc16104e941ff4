package runner

import (
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// errorOutput is the result of a check that err stopped: the kind's result
// type with verdict error, the finding that says why, and only what the
// spec itself says (which adapter, which mode, which server); nil for the
// kinds that are not checks.
func errorOutput(spec *jobs.Spec, err error) *jobs.Output {
	label := func(in *jobs.Input) string {
		if spec.Label != "" {
			return spec.Label
		}
		return in.String()
	}
	switch spec.Kind {
	case jobs.KindAudit:
		mode, _ := report.ParseMode(string(spec.Mode))
		res := &report.Audit{Outcome: report.ErrorOutcome(err, label(spec.Adapter)), Matrices: []*report.AuditMatrix{},
			Summary: report.AuditSummary{Adapter: label(spec.Adapter), Mode: mode, Files: []string{}, DTypes: map[string]int{}}}
		return &jobs.Output{Audit: res, Markdown: AuditMarkdown(res)}
	case jobs.KindRebuild:
		res := &report.Rebuild{Outcome: report.ErrorOutcome(err, label(spec.Base)), Differing: []string{}, Matrices: []*report.RebuildMatrix{}}
		return &jobs.Output{Rebuild: res, Markdown: RebuildMarkdown(label(spec.Base), res)}
	case jobs.KindHidden:
		res := &report.Hidden{Outcome: report.ErrorOutcome(err, spec.Cand.String()), Summary: report.HiddenSummary{Tol: tolOf(spec)}, Records: []report.RecordStats{}}
		if res.Summary.Tol == (report.HiddenTol{}) {
			res.Summary.Tol = report.DefaultHidden
		}
		if spec.Server != "" {
			res.Source = "captured live from " + clip(spec.Server, 200)
		}
		return &jobs.Output{Hidden: res, Note: res.Source, Markdown: HiddenMarkdown(res, res.Source)}
	case jobs.KindAnswers:
		res := &report.Answers{Outcome: report.ErrorOutcome(err, spec.Cand.String()), Records: []report.AnswerStats{}}
		return &jobs.Output{Answers: res, Markdown: AnswersMarkdown(res)}
	case jobs.KindDecisions:
		server := spec.Server
		if spec.Browser {
			server = "the demo model in the browser"
		}
		res := &report.Decisions{Outcome: report.ErrorOutcome(err, server), Summary: report.DecisionsSummary{Server: server}, Records: []report.DecisionRow{}}
		return &jobs.Output{Decisions: res, Markdown: DecisionsMarkdown(res)}
	}
	return nil
}
