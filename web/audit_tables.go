package web

import (
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// The Audit page's states and tables: the progress by phase, the summary
// lines, the findings, the pairs and the provenance.

// auditPhases are the audit's steps as the progress card names them.
var auditPhases = []string{"reading headers", "inventory", "checks", "report"}

// phase is the step the running audit is at (an index of auditPhases).
func (p *AuditPage) phase() int {
	switch {
	case p.Prog.Final:
		return 3
	case p.Res != nil && p.Partial, p.Prog.Total > 0:
		return 2
	}
	return 0
}

func (p *AuditPage) renderStatus() app.UI {
	switch p.Status {
	case "running":
		s, ph := p.Prog, p.phase()
		// The figures once the sizes are known; until then the step's name.
		detail, bar := "", app.Progress()
		if s.Total > 0 {
			detail, bar = s.String(), bar.Max(1).Value(fmt.Sprintf("%.4f", s.Fraction()))
		}
		return app.Div().Class("card").ID("progress").Body(
			app.Div().Text(fmt.Sprintf("Auditing %s…", clip(p.Source, 120))),
			app.Div().Class("phases").ID("phases").Text(fmt.Sprintf("step %d of 4: %s (reading headers → inventory → checks → report)", ph+1, auditPhases[ph])),
			bar,
			app.Div().Class("muted").ID("progress-detail").Text(detail),
			app.If(p.Engine != "", func() app.UI { return app.Div().Class("muted").ID("engine").Text("Checking in " + p.Engine) }),
		)
	case "error":
		return errorCard(p.Err)
	}
	return app.Text("")
}

// renderFindings lists the findings (the engine's table), the severity
// buttons filtering them; each code links to its documentation.
func (p *AuditPage) renderFindings(count map[report.Severity]int) app.UI {
	cur := ""
	if t := pageOf("findings"); t != nil {
		cur = t.View.Module
	}
	filterBtn := func(sev, label string) app.UI {
		b := app.Button().Text(label).OnClick(func(ctx app.Context, e app.Event) { show(ctx, "findings", report.View{Module: sev}, false) })
		if cur == sev {
			b = b.Class("active")
		}
		return b
	}
	return box("card",
		app.H2().Text(fmt.Sprintf("Findings (%d fail, %d warn, %d info)", count[report.Fail], count[report.Warn], count[report.Info])),
		box("filters", filterBtn("", "all"), filterBtn("fail", "fail"), filterBtn("warn", "warn"), filterBtn("info", "info")),
		grid("findings", nil),
	)
}

// renderPairs is the table of pairs, its spectra drawn here.
func (p *AuditPage) renderPairs() app.UI {
	ms := p.Res.Matrices
	return box("card",
		app.H2().Text(fmt.Sprintf("Pairs (%d)", len(ms))),
		grid("matrices", func(r report.Row) app.UI {
			if r.Ref < 0 || r.Ref >= len(ms) {
				return app.Text("–")
			}
			return spectrum(ms[r.Ref].Sigma)
		}),
	)
}

// renderProvenance shows what was audited, with what and when, and the
// files read with their digests (the engine's tables).
func renderProvenance() app.UI {
	return app.Div().Class("card").ID("provenance").Body(app.H2().Text("Provenance"), grid("provenance-info", nil), grid("provenance-files", nil))
}
