package runner

import (
	"fmt"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// The Markdown reports the pages offer for download beside the JSON: made
// here, with the result, so that the pages carry no report code.

var cell = report.MDCell

func findingsTable(b *strings.Builder, fs []report.Finding) {
	b.WriteString("| severity | code | subject | message |\n|---|---|---|---|\n")
	for _, f := range fs {
		fmt.Fprintf(b, "| %s | `%s` | %s | %s |\n", f.Severity, cell(string(f.Code)), cell(f.Subject), cell(f.Message))
	}
}

// AuditMarkdown renders an audit.
func AuditMarkdown(r *report.Audit) string {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "# clefcheck audit: %s\n\n**Verdict: %s** (%s audit, %.2f s)\n\n", cell(s.Adapter), r.Verdict.Label(), s.Mode, s.Seconds)
	fmt.Fprintf(&b, "- %d pairs (%d large, %d small), %d parameters, %d bytes\n- r = %d, lora_alpha = %g, scaling %g\n- expected pairs from %s; report %s; claims %s\n",
		s.Pairs, s.Large, s.Small, s.Parameters, s.Bytes, s.Rank, s.Alpha, s.Scaling, cell(s.Expectations), cell(report.OrNone(s.Report)), cell(report.OrNone(s.Claims)))
	if s.Kernel != "" {
		fmt.Fprintf(&b, "- computed: %s\n", cell(s.Kernel))
	}
	provenanceMD(&b, r.Provenance)
	b.WriteString("\n## Findings\n\n")
	findingsTable(&b, r.Findings)
	b.WriteString("\n## Pairs\n\n| module | out × in | r | rank | σ₁ | form dev. | report σ / tol | method |\n|---|---|---|---|---|---|---|---|\n")
	for _, m := range r.Matrices {
		method := m.Method
		if m.SigmaBound != nil {
			method += fmt.Sprintf(" ±%.2g%%", 100**m.SigmaBound)
		}
		fmt.Fprintf(&b, "| %s | %d × %d | %d | %s | %s | %s | %s | %s |\n", cell(m.Module), m.Out, m.In, m.Rank, report.NumOr(float64(m.NumRank), m.Sigma != nil, "%.0f"),
			report.FirstOr(m.Sigma), report.PtrOr(m.FormDev, "%.2g"), report.PtrOr(m.ReportSV, "%.2f"), cell(method))
	}
	return b.String()
}

// ProvenanceText is an audit's provenance as the page shows it: the
// Markdown report's section, without its heading.
func ProvenanceText(p *report.Provenance) string {
	var b strings.Builder
	provenanceMD(&b, p)
	return strings.TrimPrefix(b.String(), "\n## Provenance\n\n")
}

// provenanceMD renders what was audited, with what and when: the source
// down to its commit, each file's SHA-256 beside the one its host lists,
// the claims profile's digest, the tool, the mode, the time.
func provenanceMD(b *strings.Builder, p *report.Provenance) {
	if p == nil {
		return
	}
	b.WriteString("\n## Provenance\n\n")
	s := p.Source
	switch s.Kind {
	case "hub":
		fmt.Fprintf(b, "- source: %s at %s → commit `%s`", cell(s.Repo), cell(s.Revision), cell(s.Commit))
		if s.Path != "" {
			fmt.Fprintf(b, ", folder %s", cell(s.Path))
		}
		fmt.Fprintf(b, " (%s)\n", cell(s.Endpoint))
	case "url":
		fmt.Fprintf(b, "- source: %s\n", cell(s.URL))
	default:
		fmt.Fprintf(b, "- source: %s\n", cell(report.OrNone(s.Local)))
	}
	t := p.Tool
	fmt.Fprintf(b, "- tool: %s %s", cell(t.Name), cell(t.Version))
	if t.Revision != "" {
		fmt.Fprintf(b, " (revision %s)", cell(t.Revision))
	}
	if t.Engine != "" {
		fmt.Fprintf(b, ", engine %s", cell(t.Engine))
	}
	b.WriteString("\n")
	if c := p.Claims; c != nil {
		fmt.Fprintf(b, "- claims: %s, SHA-256 `%s`\n", cell(c.Name), cell(c.SHA256))
	}
	fmt.Fprintf(b, "- mode: %s; started %s; %.2f s\n", p.Mode, p.Started.Format("2006-01-02 15:04:05Z07:00"), p.Seconds)
	if p.Seed != "" {
		fmt.Fprintf(b, "- seed: %s\n", cell(p.Seed))
	}
	d := p.Digests
	if !d.Computed {
		fmt.Fprintf(b, "- digests: not computed (%s)\n", cell(report.OrNone(d.Why)))
		return
	}
	fmt.Fprintf(b, "- digests: %d bytes hashed (%d read again) in %.2f s\n\n| file | bytes | SHA-256 | listed by the host |\n|---|---|---|---|\n", d.Bytes, d.Reread, d.Seconds)
	for _, f := range p.Files {
		listed := "–"
		switch {
		case f.Listed == "":
		case f.Listed == f.SHA256:
			listed = "matches"
		default:
			listed = "**differs**: `" + cell(f.Listed) + "`"
		}
		fmt.Fprintf(b, "| %s | %d | `%s` | %s |\n", cell(f.Name), f.Size, cell(report.OrNone(f.SHA256)), listed)
	}
}

// HiddenMarkdown renders a hidden-state comparison; note says where the
// states came from.
func HiddenMarkdown(r *report.Hidden, note string) string {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "# clefcheck: hidden states\n\n**Verdict: %s** — %d records, %d compared, %d beyond tolerance (cos ≥ %g, rel. L2 ≤ %g)\n\n%s\n\n",
		r.Verdict.Label(), s.Records, s.Compared, s.Failed, s.Tol.MinCosine, s.Tol.MaxRelL2, cell(note))
	b.WriteString("## By layer\n\n| layer | worst cosine | worst rel. L2 | worst NMSE | max abs. diff. | within tolerance |\n|---|---|---|---|---|---|\n")
	for _, l := range s.ByLayer {
		fmt.Fprintf(&b, "| %d | %.6f | %.4g | %.3g | %.3g | %v |\n", l.Layer, l.Cosine, l.RelL2, l.NMSE, l.MaxAbs, l.OK)
	}
	b.WriteString("\n## Records, worst first\n\n| record | status | worst layer | cosine | rel. L2 | detail |\n|---|---|---|---|---|---|\n")
	for _, rs := range r.Records {
		layer, cos, rel := "–", "–", "–"
		if rs.Worst != nil {
			layer, cos, rel = fmt.Sprint(rs.Worst.Layer), fmt.Sprintf("%.6f", rs.Worst.Cosine), fmt.Sprintf("%.4g", rs.Worst.RelL2)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", cell(rs.ID), cell(rs.Status), layer, cos, rel, cell(rs.Detail))
	}
	return b.String()
}

// DecisionsMarkdown renders a batch of decisions.
func DecisionsMarkdown(d *report.Decisions) string {
	var b strings.Builder
	s := d.Summary
	l := s.Latency
	fmt.Fprintf(&b, "# clefcheck: decisions from %s\n\n**Verdict: %s** — %d of %d records answered, %d failed; p50 %.1f ms, p90 %.1f ms, p99 %.1f ms; %.1f decisions/s\n\n",
		cell(s.Server), d.Verdict.Label(), s.Answered, s.Records, s.Failed, l.P50, l.P90, l.P99, l.Throughput)
	if s.Agree != nil {
		fmt.Fprintf(&b, "%d of %d agree with the reference.\n\n", *s.Agree, s.Records)
	}
	if a := s.Answers; a != nil && a.Known > 0 {
		fmt.Fprintf(&b, "Known answers: reference %d of %d right, server %d of %d. Max |Δlogit| %.3g, mean KL %.3g nats.\n\n", a.RefCorrect, a.Known, a.CandCorrect, a.Known, a.MaxDLogit, a.MeanKL)
	}
	if h := s.Hidden; h != nil {
		fmt.Fprintf(&b, "Hidden states: %d compared, %d beyond tolerance; worst cosine %.6f, worst rel. L2 %.4g.\n\n", h.Compared, h.Failed, h.MinCosine, h.MaxRelL2)
	}
	if len(d.Findings) > 0 {
		findingsTable(&b, d.Findings)
		b.WriteString("\n")
	}
	b.WriteString("| record | server | reference | known | ms | error |\n|---|---|---|---|---|---|\n")
	for _, r := range d.Records {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f | %s |\n", cell(r.ID), cell(r.Choice), cell(r.Reference), cell(r.Known), r.LatencyMS, cell(r.Error))
	}
	return b.String()
}

// AnswersMarkdown renders an answers comparison.
func AnswersMarkdown(r *report.Answers) string {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "# clefcheck: answers\n\n**Verdict: %s** — %d of %d records agree with the reference (%d answered); max |Δlogit| %.4g, mean KL %.3g nats\n\n",
		r.Verdict.Label(), s.Agree, s.Records, s.Answered, s.MaxDLogit, s.MeanKL)
	if s.Known > 0 {
		fmt.Fprintf(&b, "Known answers: reference %d of %d right, candidate %d of %d.\n\n", s.RefCorrect, s.Known, s.CandCorrect, s.Known)
	}
	if len(r.Findings) > 0 {
		findingsTable(&b, r.Findings)
		b.WriteString("\n")
	}
	b.WriteString("| record | reference | candidate | known | max abs. Δlogit | KL (nats) | status |\n|---|---|---|---|---|---|---|\n")
	for _, a := range r.Records {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.4g | %.3g | %s |\n", cell(a.ID), cell(a.Ref), cell(a.Cand), cell(a.Known), a.MaxDLogit, a.KL, cell(a.Status))
	}
	return b.String()
}

// BlockMarkdown renders a sampled block's statistics.
func BlockMarkdown(b *report.Block) string {
	return fmt.Sprintf("## Block of s·B·A\n\n%s (%d × %d, s = %g): rows %d–%d, columns %d–%d\n\n| min | max | mean | rms |\n|---|---|---|---|\n| %.6g | %.6g | %.6g | %.6g |\n\n",
		cell(b.Module), b.Out, b.In, b.Scaling, b.Row0, b.Row0+b.Rows-1, b.Col0, b.Col0+b.Cols-1, b.Min, b.Max, b.Mean, b.RMS)
}

// RebuildMarkdown renders a rebuild check of the named checkpoints.
func RebuildMarkdown(checkpoints string, r *report.Rebuild) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Rebuild check: %s\n\nCheckpoints: %s. %d tensors compared, %d differ; %d modules rebuilt.\n\n", r.Verdict.Label(), cell(checkpoints), r.Compared, len(r.Differing), len(r.Matrices))
	if r.Plan != nil {
		fmt.Fprintf(&b, "%s; read %s.\n\n", cell(r.Plan.String()), report.MB(r.BytesRead))
	}
	sampled := r.Sample != nil
	if sampled {
		s := r.Sample
		fmt.Fprintf(&b, "Sampled: %d rows per module, seed %d; the figures are estimates, each interval at level %.6g (%d intervals, %.0f%% together). Estimator: %s.\n\n", s.RowsPerModule, s.Seed, s.Level, s.Intervals, 100*s.Confidence, cell(s.Estimator))
	}
	if len(r.Findings) > 0 {
		findingsTable(&b, r.Findings)
		b.WriteString("\n")
	}
	if sampled {
		b.WriteString("| module | out × in | rows | residual / noise | interval | rebuilt rel. error | interval |\n|---|---|---|---|---|---|---|\n")
		for _, m := range r.Matrices {
			iv := func(x *[2]float64, scale float64) string {
				if x == nil {
					return "–"
				}
				return fmt.Sprintf("%.4g–%.4g", scale*x[0], scale*x[1])
			}
			fmt.Fprintf(&b, "| %s | %d × %d | %d of %d | %.4f | %s | %.4g%% | %s%% |\n", cell(m.Module), m.Out, m.In, m.Rows, m.Units, m.ResidualToNoise, iv(m.ResidualToNoiseCI, 1), 100*m.RebuiltRelError, iv(m.RebuiltRelErrorCI, 100))
		}
		return b.String()
	}
	b.WriteString("| module | out × in | residual / noise | rebuilt rel. error |\n|---|---|---|---|\n")
	for _, m := range r.Matrices {
		fmt.Fprintf(&b, "| %s | %d × %d | %.4f | %.4g%% |\n", cell(m.Module), m.Out, m.In, m.ResidualToNoise, 100*m.RebuiltRelError)
	}
	return b.String()
}
