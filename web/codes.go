package web

import (
	"context"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// The codes page (at /codes) documents every finding code, from the
// engine's table (report.Codes, also wasm/CODES.md): what it means, its
// severities, what to do; every finding's code links to its row
// (/codes#CODE). The Audit page's component draws it (Doc "codes"): a
// component type of its own costs app.wasm some 19 kB.

// mountCodes asks the engine for the codes table, then shows the row the
// link names.
func (p *AuditPage) mountCodes(ctx app.Context) {
	ctx.Async(func() {
		_, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindCodes}, nil)
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Err = "the engine could not list the codes: " + err.Error()
				return
			}
			p.Status = "done"
			ctx.Defer(func(ctx app.Context) { app.Window().ScrollToID(strings.TrimPrefix(app.Window().URL().Fragment, "#")) })
		})
	})
}

func (p *AuditPage) renderCodes() app.UI {
	return shell("codes",
		app.H1().Text("Finding codes"),
		app.P().Class("lead").Text("Every finding carries one of these stable codes (tools and CI match on them). Severity fail says the artifact is wrong, warn that it is suspicious, info that something is noted, and error that part of the check could not be done — which says nothing about the artifact. The same table is wasm/CODES.md."),
		app.If(p.Err != "", func() app.UI { return errorCard(p.Err) }),
		app.If(p.Status == "done", func() app.UI { return box("card", grid("codes", nil)) }),
		app.If(p.Status != "done" && p.Err == "", func() app.UI { return app.P().Class("muted").Text("asking the engine for its codes…") }),
	)
}
