package runner

import (
	"fmt"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
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

// HiddenMarkdown renders a hidden-state comparison; note says where the
// states came from.
func HiddenMarkdown(r *compare.HiddenResult, note string) string {
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

// DecisionsMarkdown renders a batch of decisions from the server (or
// model) named from.
func DecisionsMarkdown(from string, d *jobs.Decisions) string {
	var b strings.Builder
	l := d.Latency
	fmt.Fprintf(&b, "# clefcheck: decisions from %s\n\n%d of %d agree with the reference; %d failed; p50 %.1f ms, p90 %.1f ms, p99 %.1f ms; %.1f decisions/s\n\n",
		cell(from), d.Agree, len(d.Rows), d.Failed, l.P50, l.P90, l.P99, l.Throughput)
	if s := d.Summary; s != nil && s.Known > 0 {
		fmt.Fprintf(&b, "Known answers: reference %d of %d right, server %d of %d. Max |Δlogit| %.3g, mean KL %.3g nats.\n\n", s.RefCorrect, s.Known, s.CandCorrect, s.Known, s.MaxDLogit, s.MeanKL)
	}
	b.WriteString("| record | server | reference | known | ms | error |\n|---|---|---|---|---|---|\n")
	for _, r := range d.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f | %s |\n", cell(r.ID), cell(r.Choice), cell(r.Ref), cell(r.Known), r.MS, cell(r.Err))
	}
	return b.String()
}

// BlockMarkdown renders a sampled block's statistics.
func BlockMarkdown(b *rebuild.Block) string {
	return fmt.Sprintf("## Block of s·B·A\n\n%s (%d × %d, s = %g): rows %d–%d, columns %d–%d\n\n| min | max | mean | rms |\n|---|---|---|---|\n| %.6g | %.6g | %.6g | %.6g |\n\n",
		cell(b.Module), b.Out, b.In, b.Scaling, b.Row0, b.Row0+b.Rows-1, b.Col0, b.Col0+b.Cols-1, b.Min, b.Max, b.Mean, b.RMS)
}

// RebuildMarkdown renders a rebuild check of the named checkpoints.
func RebuildMarkdown(checkpoints string, r *rebuild.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## Rebuild check: %s\n\nCheckpoints: %s. %d tensors compared, %d differ; %d modules rebuilt.\n\n", r.Verdict.Label(), cell(checkpoints), r.Compared, len(r.Differing), len(r.Matrices))
	if len(r.Findings) > 0 {
		findingsTable(&b, r.Findings)
		b.WriteString("\n")
	}
	b.WriteString("| module | out × in | residual / noise | rebuilt rel. error |\n|---|---|---|---|\n")
	for _, m := range r.Matrices {
		fmt.Fprintf(&b, "| %s | %d × %d | %.4f | %.4g%% |\n", cell(m.Module), m.Out, m.In, m.ResidualToNoise, 100*m.RebuiltRelError)
	}
	return b.String()
}
