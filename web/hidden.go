package web

import (
	"context"
	"fmt"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// HiddenPage compares a server's hidden states with the reference ones:
// the reference from the demo world or a local folder, the candidate from
// a local folder (a capture by 'clefcheck decide --hidden --out') or
// captured live from a decision server.
type HiddenPage struct {
	app.Compo
	Server string
	Token  string
	Status string // idle | running | done | error
	Err    string
	Note   string
	Res    *report.Hidden
	MD     string   // the result as Markdown (from the engine)
	Op     operator // the operator's records and references
	Link   string
	Charts []jobs.Figure // the result's (drawn by the engine)
	Record string        // the record opened (a click in the table)
	RecFig *jobs.Figure  // its drift per layer
}

func (p *HiddenPage) OnInit() { p.Status = "idle" }

// OnNav fills the page from its link (server, records, reference,
// endpoint, claims; run=1 starts the capture).
func (p *HiddenPage) OnNav(ctx app.Context) {
	bindPage(ctx)
	q := query(ctx)
	p.Op.fromQuery(q)
	if s, err := safeHTTP(q.Get("server")); err == nil {
		p.Server = s
	}
	p.Op.loadCard(ctx)
	if q.Get("run") == "1" {
		p.onCapture(ctx, app.Event{})
	}
}

func (p *HiddenPage) link() string {
	return linkTo("hidden", append(p.Op.query(), "server", p.Server, "claims", p.Op.Claims)...)
}

func (p *HiddenPage) Render() app.UI {
	return shell("hidden",
		app.H1().Text("Hidden states"),
		app.P().Class("lead").Text("Compares a server's hidden states with the references, record by record and layer by layer: token ids must match exactly, then cosine similarity, NMSE, max |Δ| and relative L2 error per captured layer (tolerances: cos ≥ 1 − 10⁻³, rel. L2 ≤ 1.6·10⁻²)."),
		box("card controls",
			button("hidden-demo", "primary", "Demo: capture from the demo service", p.Status == "running", p.onDemo),
			labelled("hidden-server", "Decision server", field("hidden-server", "url", "http(s)://host:port (default: this site's demo service)", p.Server, valueTo(&p.Server))),
			labelled("hidden-token", "Token", field("hidden-token", "password", "bearer token (optional)", p.Token, valueTo(&p.Token))),
			button("hidden-run", "", "Capture and compare", p.Status == "running", p.onCapture),
			shareLink(p.Link, func(l string) { p.Link = l }, p.link),
		),
		p.Op.render(),
		box("card controls",
			app.Span().Text("Or compare two local folders:"),
			picker("ref-folder", "Reference folder…", true, p.onPick("__clefcheckRef")),
			picker("cand-folder", "Capture folder…", true, p.onPick("__clefcheckCand")),
			button("compare-folders", "", "Compare", p.Status == "running", p.onFolders),
		),
		app.If(p.Status == "running", func() app.UI { return app.Div().Class("card").ID("hidden-progress").Text(p.Note) }),
		app.If(p.Status == "error", func() app.UI { return errorCard(p.Err) }),
		app.If(p.Res != nil, func() app.UI { return p.renderResult() }),
	)
}

func (p *HiddenPage) renderResult() app.UI {
	r := p.Res
	s := r.Summary
	// With nothing compared there is no figure to show.
	figures, why, table := " nothing compared", app.UI(app.Text("")), app.UI(app.Text(""))
	if s.Compared > 0 {
		figures = fmt.Sprintf(" %d records, %d compared, %d beyond tolerance; worst cosine %.6f, worst rel. L2 %.4g", s.Records, s.Compared, s.Failed, s.MinCosine, s.MaxRelL2)
	}
	if r.Verdict == report.VerdictError {
		why = couldNot(r.Findings)
	}
	if len(r.Records) > 0 {
		table = app.Div().Body(box("card", app.H2().Text("Layers"), grid("hidden-layers", nil)),
			app.Div().Class("card").OnClick(p.onRecord).Body(app.H2().Text("Records, worst first"), app.Div().Class("muted").Text("Click a record for its drift per layer."), grid("hidden-records", nil)))
	}
	return app.Div().Body(
		box("card summary",
			badge("hidden-verdict", r.Verdict),
			app.Span().Text(figures),
			app.If(p.Note != "", func() app.UI { return app.Div().Class("muted").Text(p.Note) }),
			figure(figureOf(p.Charts, "drift-plot", "")),
			downloads("hidden-json", "hidden-md", "clefcheck-hidden", jsonOf(p.Res), p.MD),
		),
		why,
		app.If(p.Record != "", func() app.UI { return p.renderRecord() }),
		table,
	)
}

func (p *HiddenPage) onPick(global string) app.EventHandler {
	return func(ctx app.Context, e app.Event) {
		app.Window().Set(global, ctx.JSSrc().Get("files"))
	}
}

// onFolders compares two chosen folders of <id>.safetensors files.
func (p *HiddenPage) onFolders(ctx app.Context, e app.Event) {
	if _, err := pickedNames("__clefcheckRef"); err != nil {
		p.Status, p.Err = "error", "reference folder: "+err.Error()
		return
	}
	if _, err := pickedNames("__clefcheckCand"); err != nil {
		p.Status, p.Err = "error", "capture folder: "+err.Error()
		return
	}
	p.run(ctx, &jobs.Spec{Kind: jobs.KindHidden, Ref: &jobs.Input{Files: "__clefcheckRef"}, Cand: &jobs.Input{Files: "__clefcheckCand"}}, "comparing the folders…")
}

// onDemo sends the records (the operator's, else the demo world's) with
// return_hidden to the server and compares the states with the references
// (the operator's, else the demo world's, read by range from the site),
// all in the engine worker.
func (p *HiddenPage) onDemo(ctx app.Context, e app.Event) { p.capture(ctx, false) }

func (p *HiddenPage) onCapture(ctx app.Context, e app.Event) { p.capture(ctx, true) }

func (p *HiddenPage) capture(ctx app.Context, operator bool) {
	server := p.Server
	if server == "" {
		server = strings.TrimSuffix(siteURL("./"), "/")
	}
	server, err := safeHTTP(server)
	if err != nil {
		p.Status, p.Err = "error", "decision server: "+err.Error()
		return
	}
	spec := &jobs.Spec{Kind: jobs.KindHidden, Server: server, Token: p.Token, Site: demoSite()}
	note := "loading the demo records…"
	// The operator's records and references, when given, replace the demo's.
	if rec, ref := p.Op.inputs(); operator && (rec != nil || ref != nil) {
		spec.RecordFiles, spec.Ref, note = rec, ref, "reading the records and the references…"
	}
	showLink(p.link())
	p.run(ctx, spec, note)
}

func (p *HiddenPage) run(ctx app.Context, spec *jobs.Spec, note string) {
	p.Status, p.Err, p.Res, p.Note, p.Record, p.RecFig = "running", "", nil, note, "", nil
	ctx.Async(func() {
		out, err := runJob(context.Background(), spec, func(e jobs.Event) {
			if e.Note != "" {
				dispatch(ctx, func(ctx app.Context) { p.Note = e.Note })
			}
		})
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Res, p.MD, p.Status, p.Note, p.Charts = out.Hidden, out.Markdown, "done", out.Note, out.Charts
		})
	})
}
