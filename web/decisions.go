package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// DecisionsPage sends test records to a decision server and compares the
// answers with the references.
type DecisionsPage struct {
	app.Compo
	Server      string
	Token       string
	Concurrency int
	Where       string // server | browser
	Status      string // idle | loading | running | done | error
	Err         string
	Records     []report.Record
	Ref         map[string]*report.Answer
	Rows        []report.DecisionRow // as they come
	Failed      int
	Result      *report.Decisions // the finished batch (the schema of clefcheck decide --json)
	Charts      []jobs.Figure     // its latency and agreement (drawn by the engine)
	CORSHint    bool              // requests failed as CORS refusals do, and the server answers
	Silent      bool              // requests failed, and the server does not answer at all
	MD          string            // the batch as Markdown (from the engine)
	Op          operator          // the operator's records and references
	Link        string            // the page's link, once asked for
	cancel      context.CancelFunc
}

const demoDatasets = "arc-mini,intents-mini"

func (p *DecisionsPage) OnInit() {
	p.Concurrency, p.Status, p.Where = 4, "idle", "server"
}

// OnNav fills the page from its link (server, where, records, reference,
// endpoint, claims; run=1 starts it) and, on a site with no decision
// service (a static host), decides with the demo model in the browser.
func (p *DecisionsPage) OnNav(ctx app.Context) {
	bindPage(ctx)
	q := query(ctx)
	p.Op.fromQuery(q)
	if s, err := safeHTTP(q.Get("server")); err == nil {
		p.Server = s
	}
	where := q.Get("where")
	if where == "browser" || where == "server" {
		p.Where = where
	}
	p.Op.loadCard(ctx)
	run := q.Get("run") == "1"
	ctx.Async(func() {
		has := p.Server != "" || siteHasService()
		dispatch(ctx, func(ctx app.Context) {
			if !has && where == "" {
				p.Where = "browser"
			}
			if run {
				p.start(ctx)
			}
		})
	})
}

// start runs the operator's records if given, else the demo world's.
func (p *DecisionsPage) start(ctx app.Context) {
	if rec, _ := p.Op.inputs(); rec != nil || len(p.Records) > 0 {
		p.onRun(ctx, app.Event{})
		return
	}
	p.load(ctx, true)
}

func (p *DecisionsPage) link() string {
	return linkTo("decisions", append(p.Op.query(), "server", p.Server, "where", p.Where, "claims", p.Op.Claims)...)
}

func (p *DecisionsPage) Render() app.UI {
	agree, answered := 0, 0
	for _, r := range p.Rows {
		if r.Status == report.Answered {
			answered++
			if r.Reference != "" && r.Choice == r.Reference {
				agree++
			}
		}
	}
	var sum report.DecisionsSummary
	verdict, why, agreement := app.UI(app.Text("")), app.UI(app.Text("")), app.UI(app.Text(""))
	if p.Result != nil {
		sum, verdict = p.Result.Summary, badge("decisions-verdict", p.Result.Verdict)
		if p.Result.Verdict == report.VerdictError {
			why = couldNot(p.Result.Findings)
		}
	}
	// Agreement and latency are over answers: with none, there is no figure.
	figures := fmt.Sprintf(" %d records sent, none answered", len(p.Rows))
	if answered > 0 {
		agreement = app.Span().Class("count").ID("agreement").Text(fmt.Sprintf(" %d of %d agree", agree, len(p.Rows)))
		figures = fmt.Sprintf("  %d failed · p50 %.1f ms · p90 %.1f ms · %.1f decisions/s", p.Failed, sum.Latency.P50, sum.Latency.P90, sum.Latency.Throughput)
	}
	return shell("decisions",
		app.H1().Text("Live decisions"),
		app.P().Class("lead").Text("Sends the test records to a decision service (POST /v1/systemone) and compares its answers with the reference answers computed at full precision."),
		box("card controls",
			button("use-demo", "primary", "Use the demo world", p.Status == "running" || p.Status == "loading", p.onDemo),
			labelled("decide-where", "Decide with", choice("decide-where", p.Where, setTo(&p.Where), "server", "decision server", "browser", "demo model, in this browser")),
			labelled("server-url", "Decision server", field("server-url", "url", "http(s)://host:port, e.g. http://127.0.0.1:8090", p.Server, valueTo(&p.Server))),
			labelled("token", "Token", field("token", "password", "bearer token (optional)", p.Token, valueTo(&p.Token))),
			app.Label().Body(app.Text("concurrency "), field("concurrency", "number", "", p.Concurrency, valueTo(&p.Concurrency)).Min(1).Max(jobs.MaxConcurrency)),
			button("run", "", runLabel(len(p.Records), p.Op.RecURL+p.Op.RecNote != ""), (len(p.Records) == 0 && p.Op.RecURL+p.Op.RecNote == "") || p.Status == "running", p.onRun),
			shareLink(p.Link, func(l string) { p.Link = l }, p.link),
		),
		p.Op.render(),
		app.If(p.Status == "error", func() app.UI { return errorCard(p.Err) }),
		app.If(p.Silent, func() app.UI {
			return app.Div().Class("card error").ID("no-answer").Text(clip(p.Server, 200) + " does not answer this browser at all (not even a request that needs no CORS): is the server running, and is the URL right?")
		}),
		app.If(p.CORSHint, func() app.UI {
			return app.Div().Class("card warn").ID("cors-hint").Body(
				app.P().Text("Requests failed the way cross-origin (CORS) refusals do: the server must allow this page's origin, including the preflight of a JSON POST with Authorization. Or run the local proxy and point this page at it:"),
				app.Pre().Text("clefcheck proxy --to "+clip(p.Server, 200)+" --allow-origin "+pageOrigin()+"   # then use http://127.0.0.1:8091"),
			)
		}),
		app.If(len(p.Rows) > 0, func() app.UI {
			return app.Div().Body(
				app.Div().Class("card summary").ID("decisions-summary").Body(
					verdict, agreement,
					app.Span().Text(figures),
					app.If(answered > 0 && sum.Answers != nil && sum.Answers.Known > 0, func() app.UI {
						a := sum.Answers
						return app.Div().Class("muted").Text(fmt.Sprintf("known answers: reference %d of %d right, server %d of %d; max |Δlogit| %.3g, mean KL %.3g nats",
							a.RefCorrect, a.Known, a.CandCorrect, a.Known, a.MaxDLogit, a.MeanKL))
					}),
					box("charts", figure(figureOf(p.Charts, "latency-histogram", "")), figure(figureOf(p.Charts, "agreement-chart", ""))),
					app.If(p.Status == "done", func() app.UI {
						return downloads("decisions-json", "decisions-md", "clefcheck-decisions", p.resultJSON, p.MD)
					}),
				),
				why,
				app.If(answered > 0 && p.Status == "done", func() app.UI {
					return box("card", app.H2().Text("Records"), grid("decisions", nil))
				}),
			)
		}),
	)
}

// onDemo loads the demo world's records and reference answers from the
// site, and points at the demo decision service on the same origin.
func (p *DecisionsPage) onDemo(ctx app.Context, e app.Event) { p.load(ctx, false) }

// runLabel is the run button's text: the records loaded, or the
// operator's (counted once read).
func runLabel(n int, operator bool) string {
	if operator {
		return "Run the records given"
	}
	return fmt.Sprintf("Run %d records", n)
}

// load loads the demo world's records (then runs them if run).
func (p *DecisionsPage) load(ctx app.Context, run bool) {
	p.Status, p.Err = "loading", ""
	if p.Server == "" {
		p.Server = strings.TrimSuffix(siteURL("./"), "/")
	}
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindRecords, Site: demoSite()}, nil)
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Records, p.Ref, p.Status = out.Records, out.RefAnswers, "idle"
			if run {
				p.onRun(ctx, app.Event{})
			}
		})
	})
}

// demoSite is the demo world this site serves.
func demoSite() *jobs.Input { return &jobs.Input{URL: siteURL("demo/")} }

// onRun sends the records to the server, or decides them with the demo
// model in the engine worker, listing the answers as they come.
func (p *DecisionsPage) onRun(ctx app.Context, e app.Event) {
	spec := &jobs.Spec{Kind: jobs.KindDecisions, Records: p.Records, RefAnswers: p.Ref, Concurrency: max(1, min(jobs.MaxConcurrency, p.Concurrency))}
	// The operator's records and references, when given, replace the demo's.
	if rec, ref := p.Op.inputs(); rec != nil || ref != nil {
		if rec != nil {
			spec.Records, spec.RecordFiles = nil, rec
		}
		if ref != nil {
			spec.RefAnswers, spec.Ref = nil, ref
		}
	}
	showLink(p.link())
	if p.Where == "browser" {
		spec.Browser, spec.Site = true, demoSite()
	} else {
		server, err := safeHTTP(p.Server)
		if err != nil {
			p.Status, p.Err = "error", "decision server: "+err.Error()
			return
		}
		spec.Server, spec.Token = server, p.Token
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.Status, p.Err, p.Rows, p.Result, p.Failed, p.CORSHint, p.Silent, p.MD, p.Charts = cancel, "running", "", nil, nil, 0, false, false, "", nil
	corsLike := false
	ctx.Async(func() {
		out, err := runJob(rctx, spec, func(e jobs.Event) {
			if e.Row == nil {
				return
			}
			row := *e.Row
			dispatch(ctx, func(ctx app.Context) {
				p.Rows = append(p.Rows, row)
				if row.Status == report.Failed {
					p.Failed++
				}
			})
			corsLike = corsLike || row.CORS
		})
		// The browser shows a CORS refusal and a host that does not answer
		// alike (fetch rejects with a TypeError): ask the host for a reply
		// that needs no CORS to tell them apart.
		answers := corsLike && spec.Server != "" && hostAnswers(spec.Server)
		dispatch(ctx, func(ctx app.Context) {
			p.CORSHint, p.Silent = answers, corsLike && !answers
			p.cancel = nil
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			d := out.Decisions
			p.Result, p.Rows, p.Failed, p.MD, p.Status, p.Charts = d, d.Records, d.Summary.Failed, out.Markdown, "done", out.Charts
		})
	})
}

// resultJSON is the batch in the schema of clefcheck decide --json.
func (p *DecisionsPage) resultJSON() []byte {
	data, _ := json.MarshalIndent(p.Result, "", "  ")
	return data
}
