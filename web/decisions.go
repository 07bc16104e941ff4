package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/source"
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
	Records     []refs.Record
	Ref         map[string]*refs.Answer
	Rows        []decisionRow
	Summary     *compare.AnswersSummary
	Latency     decision.Latency
	Failed      int
	CORSHint    bool
	cancel      context.CancelFunc
}

type decisionRow struct {
	ID, Choice, Ref, Known, Err string
	MS                          float64
}

const demoDatasets = "arc-mini,intents-mini"

func (p *DecisionsPage) OnInit() {
	p.Concurrency, p.Status, p.Where = 4, "idle", "server"
}

func (p *DecisionsPage) Render() app.UI {
	agree := 0
	for _, r := range p.Rows {
		if r.Err == "" && r.Ref != "" && r.Choice == r.Ref {
			agree++
		}
	}
	return shell("decisions",
		app.H1().Text("Live decisions"),
		app.P().Class("lead").Text("Sends the test records to a decision service (POST /v1/systemone) and compares its answers with the reference answers computed at full precision."),
		app.Div().Class("card controls").Body(
			app.Button().ID("use-demo").Class("primary").Text("Use the demo world").OnClick(p.onDemo).Disabled(p.Status == "running" || p.Status == "loading"),
			app.Select().ID("decide-where").OnChange(p.ValueTo(&p.Where)).Body(
				app.Option().Value("server").Text("decision server").Selected(p.Where == "server"),
				app.Option().Value("browser").Text("demo model, in this browser").Selected(p.Where == "browser"),
			),
			app.Input().ID("server-url").Type("url").Placeholder("http://127.0.0.1:8090").Value(p.Server).OnChange(p.ValueTo(&p.Server)),
			app.Input().ID("token").Type("password").Placeholder("bearer token (optional)").Value(p.Token).OnChange(p.ValueTo(&p.Token)),
			app.Label().Body(app.Text("concurrency "), app.Input().ID("concurrency").Type("number").Min(1).Max(32).Value(p.Concurrency).OnChange(p.ValueTo(&p.Concurrency))),
			app.Button().ID("run").Text(fmt.Sprintf("Run %d records", len(p.Records))).OnClick(p.onRun).Disabled(len(p.Records) == 0 || p.Status == "running"),
		),
		app.If(p.Status == "error", func() app.UI { return app.Div().Class("card error").ID("error").Text(clip(p.Err, 600)) }),
		app.If(p.CORSHint, func() app.UI {
			return app.Div().Class("card warn").ID("cors-hint").Body(
				app.P().Text("Requests failed the way cross-origin (CORS) refusals do: the server must allow this page's origin, including the preflight of a JSON POST with Authorization. Or run the local proxy and point this page at it:"),
				app.Pre().Text("clefcheck proxy --to "+clip(p.Server, 200)+"   # then use http://127.0.0.1:8091"),
			)
		}),
		app.If(len(p.Rows) > 0, func() app.UI {
			return app.Div().Body(
				app.Div().Class("card summary").ID("decisions-summary").Body(
					app.Span().Class("badge "+map[bool]string{true: "pass", false: "fail"}[agree == len(p.Rows) && p.Failed == 0]).ID("agreement").
						Text(fmt.Sprintf("%d of %d agree", agree, len(p.Rows))),
					app.Span().Text(fmt.Sprintf("  %d failed · p50 %.1f ms · p90 %.1f ms · %.1f decisions/s", p.Failed, p.Latency.P50, p.Latency.P90, p.Latency.Throughput)),
					app.If(p.Summary != nil && p.Summary.Known > 0, func() app.UI {
						return app.Div().Class("muted").Text(fmt.Sprintf("known answers: reference %d of %d right, server %d of %d; max |Δlogit| %.3g, mean KL %.3g nats",
							p.Summary.RefCorrect, p.Summary.Known, p.Summary.CandCorrect, p.Summary.Known, p.Summary.MaxDLogit, p.Summary.MeanKL))
					}),
					histogram(p.Rows),
					app.If(p.Status == "done", func() app.UI {
						return app.Div().Class("actions").Body(
							app.Button().ID("decisions-json").Text("Download JSON").OnClick(func(ctx app.Context, e app.Event) {
								download("clefcheck-decisions.json", "application/json", p.resultJSON())
							}),
							app.Button().ID("decisions-md").Text("Download Markdown").OnClick(func(ctx app.Context, e app.Event) {
								download("clefcheck-decisions.md", "text/markdown", []byte(p.markdown()))
							}),
						)
					}),
				),
				app.Table().ID("decisions").Body(
					app.THead().Body(app.Tr().Body(app.Th().Text("record"), app.Th().Text("server"), app.Th().Text("reference"), app.Th().Text("known"), app.Th().Text("ms"), app.Th().Text(""))),
					app.TBody().Body(app.Range(p.Rows).Slice(func(i int) app.UI {
						r := p.Rows[i]
						cls := "ok"
						if r.Err != "" || (r.Ref != "" && r.Choice != r.Ref) {
							cls = "bad"
						}
						return app.Tr().Class(cls).Body(app.Td().Class("mono").Text(clip(r.ID, 60)), app.Td().Text(clip(r.Choice, 40)), app.Td().Text(clip(r.Ref, 40)),
							app.Td().Text(clip(r.Known, 40)), app.Td().Text(fmt.Sprintf("%.1f", r.MS)), app.Td().Class("muted").Text(clip(r.Err, 200)))
					})),
				),
			)
		}),
	)
}

// histogram draws the latency distribution as SVG bars.
func histogram(rows []decisionRow) app.UI {
	var ms []float64
	for _, r := range rows {
		if r.Err == "" {
			ms = append(ms, r.MS)
		}
	}
	if len(ms) < 2 {
		return app.Text("")
	}
	lo, hi := ms[0], ms[0]
	for _, v := range ms {
		lo, hi = min(lo, v), max(hi, v)
	}
	const bins, w, h = 20, 300.0, 60.0
	counts := make([]int, bins)
	for _, v := range ms {
		i := int(float64(bins) * (v - lo) / (hi - lo + 1e-9))
		counts[min(bins-1, i)]++
	}
	top := 1
	for _, c := range counts {
		top = max(top, c)
	}
	var bars []app.UI
	for i, c := range counts {
		bh := h * float64(c) / float64(top)
		bars = append(bars, app.Elem("rect").XMLNS(svgNS).Attr("x", fmt.Sprintf("%.1f", float64(i)*w/bins+1)).Attr("y", fmt.Sprintf("%.1f", h-bh)).
			Attr("width", fmt.Sprintf("%.1f", w/bins-2)).Attr("height", fmt.Sprintf("%.1f", bh)).Attr("fill", "currentColor"))
	}
	return app.Div().Class("hist").Body(
		app.Elem("svg").XMLNS(svgNS).ID("latency-histogram").Attr("width", w).Attr("height", h).Attr("viewBox", fmt.Sprintf("0 0 %g %g", w, h)).Body(bars...),
		app.Div().Class("muted").Text(fmt.Sprintf("latency %.1f–%.1f ms", lo, hi)),
	)
}

// onDemo loads the demo world's records and reference answers from the
// site, and points at the demo decision service on the same origin.
func (p *DecisionsPage) onDemo(ctx app.Context, e app.Event) {
	p.Status, p.Err = "loading", ""
	if p.Server == "" {
		p.Server = strings.TrimSuffix(siteURL("./"), "/")
	}
	ctx.Async(func() {
		recs, ref, err := loadDemo()
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Records, p.Ref, p.Status = recs, ref, "idle"
		})
	})
}

func loadDemo() ([]refs.Record, map[string]*refs.Answer, error) {
	h, err := source.NewHTTP(siteURL("demo/"))
	if err != nil {
		return nil, nil, err
	}
	var recs []refs.Record
	ref := map[string]*refs.Answer{}
	for _, ds := range strings.Split(demoDatasets, ",") {
		rs, err := compare.ReadRecords(h, "records/"+ds+".jsonl")
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, rs...)
		data, err := source.ReadSmall(h, "reference/answers/"+ds+".jsonl", 64<<20)
		if err != nil {
			return nil, nil, err
		}
		err = refs.ReadJSONL(bytes.NewReader(data), ds, func(line int, a *refs.Answer) error {
			if err := a.Check(); err != nil {
				return err
			}
			ref[a.ID] = a
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return recs, ref, nil
}

func (p *DecisionsPage) onRun(ctx app.Context, e app.Event) {
	if p.Where == "browser" {
		p.runInBrowser(ctx)
		return
	}
	server, err := safeHTTP(p.Server)
	if err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.Status, p.Err, p.Rows, p.Summary, p.Failed, p.CORSHint = cancel, "running", "", nil, nil, 0, false
	recs, ref, conc, token := p.Records, p.Ref, max(1, min(32, p.Concurrency)), p.Token
	ctx.Async(func() {
		c := &decision.Client{BaseURL: server, Token: token, Timeout: 60 * time.Second}
		start := time.Now()
		outs := decision.Run(rctx, c, recs, decision.RunOptions{Concurrency: conc, OnOutcome: func(o *decision.Outcome) {
			row := decisionRow{ID: o.Record.ID, Known: o.Record.Answer, MS: float64(o.Latency.Microseconds()) / 1000}
			if a := ref[o.Record.ID]; a != nil {
				row.Ref = a.Choice
			}
			cors := false
			if o.Err != nil {
				row.Err = o.Err.Error()
				cors = strings.Contains(row.Err, "CORS") || strings.Contains(row.Err, "fetch() failed")
			} else {
				row.Choice = o.Resp.Choice
			}
			ctx.Dispatch(func(ctx app.Context) {
				p.Rows = append(p.Rows, row)
				if row.Err != "" {
					p.Failed++
				}
				p.CORSHint = p.CORSHint || cors
			})
		}})
		wall := time.Since(start)
		cand := map[string]*refs.Answer{}
		known := map[string]string{}
		for _, o := range outs {
			if a := o.Answer(); a != nil {
				cand[a.ID] = a
			}
			if o.Record.Answer != "" {
				known[o.Record.ID] = o.Record.Answer
			}
		}
		var sum *compare.AnswersSummary
		if len(ref) > 0 {
			s := compare.Answers(ref, cand, known).Summary
			sum = &s
		}
		lat := decision.Latencies(outs, wall)
		ctx.Dispatch(func(ctx app.Context) {
			p.Summary, p.Latency, p.Status, p.cancel = sum, lat, "done", nil
		})
	})
}

// resultJSON is the page's report (the CLI's decide schema, in part).
func (p *DecisionsPage) resultJSON() []byte {
	data, _ := json.MarshalIndent(map[string]any{"server": p.Server, "where": p.Where, "rows": p.Rows, "summary": p.Summary, "latency": p.Latency}, "", "  ")
	return data
}

// markdown renders the run as Markdown.
func (p *DecisionsPage) markdown() string {
	var b strings.Builder
	agree := 0
	for _, r := range p.Rows {
		if r.Err == "" && r.Ref != "" && r.Choice == r.Ref {
			agree++
		}
	}
	from := p.Server
	if p.Where == "browser" {
		from = "the demo model in the browser"
	}
	fmt.Fprintf(&b, "# clefcheck: decisions from %s\n\n%d of %d agree with the reference; %d failed; p50 %.1f ms, p90 %.1f ms, p99 %.1f ms; %.1f decisions/s\n\n",
		mdCell(from), agree, len(p.Rows), p.Failed, p.Latency.P50, p.Latency.P90, p.Latency.P99, p.Latency.Throughput)
	if s := p.Summary; s != nil && s.Known > 0 {
		fmt.Fprintf(&b, "Known answers: reference %d of %d right, server %d of %d. Max |Δlogit| %.3g, mean KL %.3g nats.\n\n", s.RefCorrect, s.Known, s.CandCorrect, s.Known, s.MaxDLogit, s.MeanKL)
	}
	b.WriteString("| record | server | reference | known | ms | error |\n|---|---|---|---|---|---|\n")
	for _, r := range p.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.1f | %s |\n", mdCell(r.ID), mdCell(r.Choice), mdCell(r.Ref), mdCell(r.Known), r.MS, mdCell(r.Err))
	}
	return b.String()
}

// runInBrowser decides every record with the demo model in this browser
// (a static site has no decision service), one after another.
func (p *DecisionsPage) runInBrowser(ctx app.Context) {
	p.Status, p.Err, p.Rows, p.Summary, p.Failed, p.CORSHint = "running", "", nil, nil, 0, false
	recs, ref := p.Records, p.Ref
	yield := newYield()
	ctx.Async(func() {
		start := time.Now()
		cand := map[string]*refs.Answer{}
		known := map[string]string{}
		var outs []*decision.Outcome
		for _, r := range recs {
			t0 := time.Now()
			a, err := decideInBrowser(r.ID, r.Prompt, r.Options)
			o := &decision.Outcome{Record: r, Err: err, Latency: time.Since(t0)}
			row := decisionRow{ID: r.ID, Known: r.Answer, MS: float64(o.Latency.Microseconds()) / 1000}
			if ra := ref[r.ID]; ra != nil {
				row.Ref = ra.Choice
			}
			if err != nil {
				row.Err = err.Error()
			} else {
				row.Choice = a.Choice
				cand[a.ID] = a
				o.Resp = &decision.Response{ID: a.ID, Choice: a.Choice, Options: a.Options, Logits: a.Logits, Probs: a.Probs}
			}
			if r.Answer != "" {
				known[r.ID] = r.Answer
			}
			outs = append(outs, o)
			ctx.Dispatch(func(ctx app.Context) {
				p.Rows = append(p.Rows, row)
				if row.Err != "" {
					p.Failed++
				}
			})
			if yield != nil {
				yield()
			}
		}
		var sum *compare.AnswersSummary
		if len(ref) > 0 {
			s := compare.Answers(ref, cand, known).Summary
			sum = &s
		}
		lat := decision.Latencies(outs, time.Since(start))
		ctx.Dispatch(func(ctx app.Context) {
			p.Summary, p.Latency, p.Status = sum, lat, "done"
		})
	})
}
