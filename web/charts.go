package web

import (
	"context"
	"fmt"
	"strconv"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// The pages' charts are drawn by the engine (package chart, in
// engine.wasm: app.wasm's budget has no room for them) and come with a
// job's output as SVG strings, inserted with app.Raw. chart escapes every
// text it draws (module names and record ids come from files), so the
// strings are safe as innerHTML; the caption is shown with app.Text.

// figure is a chart in the page, or nothing when there is none.
func figure(f *jobs.Figure) app.UI {
	if f == nil || f.SVG == "" {
		return app.Text("")
	}
	return app.Div().Class("chart").ID(f.ID+"-fig").Body(app.Raw(f.SVG), app.Div().Class("caption").Text(f.Caption))
}

// figureOf is the output's figure with that id (and key, when not ""),
// or nil.
func figureOf(fs []jobs.Figure, id, key string) *jobs.Figure {
	for i := range fs {
		if fs[i].ID == id && (key == "" || fs[i].Key == key) {
			return &fs[i]
		}
	}
	return nil
}

// dataOf is what a click in a chart or a table asks for: the attribute
// attr (data-pair, data-record) of the element clicked or of one of its
// ancestors, else of the first element with one in the row clicked (""
// when none).
func dataOf(e app.Event, attr string) string {
	t := e.Get("target")
	if !t.Truthy() || t.Get("closest").IsUndefined() {
		return ""
	}
	el := t.Call("closest", "["+attr+"]")
	if !el.Truthy() {
		if tr := t.Call("closest", "tr"); tr.Truthy() {
			el = tr.Call("querySelector", "["+attr+"]")
		}
	}
	if !el.Truthy() {
		return ""
	}
	return el.Call("getAttribute", attr).String()
}

// inView brings the element id into view once the page has rendered.
func inView(ctx app.Context, id string) {
	ctx.Defer(func(ctx app.Context) {
		if el := app.Window().GetElementByID(id); el.Truthy() {
			el.Call("scrollIntoView", map[string]any{"block": "nearest"})
		}
	})
}

// drawn runs a chart job and gives its figure to set on the UI goroutine.
func drawn(ctx app.Context, c *jobs.ChartSpec, set func(*jobs.Figure)) {
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindChart, Chart: c}, nil)
		dispatch(ctx, func(ctx app.Context) {
			if err == nil && len(out.Charts) > 0 {
				set(&out.Charts[0])
			}
		})
	})
}

// onRecord opens the record clicked in the hidden-state table: its drift
// per layer.
func (p *HiddenPage) onRecord(ctx app.Context, e app.Event) {
	id := dataOf(e, "data-record")
	if p.Res == nil {
		return
	}
	if i, err := strconv.Atoi(dataOf(e, "data-ref")); id == "" && err == nil && i >= 0 && i < len(p.Res.Records) {
		id = p.Res.Records[i].ID // a row of the engine's records table
	}
	if id == "" {
		return
	}
	for _, r := range p.Res.Records {
		if r.ID == id {
			p.Record, p.RecFig = id, nil
			inView(ctx, "record-detail")
			if len(r.Layers) > 0 {
				drawn(ctx, &jobs.ChartSpec{Layers: r.Layers, HiddenTol: p.Res.Summary.Tol, What: " of " + id}, func(f *jobs.Figure) {
					if p.Record == id {
						p.RecFig = f
					}
				})
			}
			return
		}
	}
}

// renderRecord is the record opened: its status and its drift per layer.
func (p *HiddenPage) renderRecord() app.UI {
	var rs *report.RecordStats
	for i := range p.Res.Records {
		if p.Res.Records[i].ID == p.Record {
			rs = &p.Res.Records[i]
		}
	}
	if rs == nil {
		return app.Text("")
	}
	what := rs.Status
	if rs.Detail != "" {
		what += ": " + clip(rs.Detail, 300)
	}
	if len(rs.Layers) == 0 {
		what += " (no layer compared)"
	}
	return app.Div().Class("card").ID("record-detail").Body(
		box("pair-head", app.H2().Text(clip(rs.ID, 120)), button("record-close", "", "Close", false, func(ctx app.Context, e app.Event) { p.Record, p.RecFig = "", nil })),
		app.Div().Class("muted").Text(what),
		figure(p.RecFig),
	)
}

// onPair opens the pair clicked (a heatmap cell or a row of the pairs
// table): the engine draws its spectrum; the card comes into view.
func (p *AuditPage) onPair(ctx app.Context, e app.Event) {
	name := dataOf(e, "data-pair")
	if i, err := strconv.Atoi(dataOf(e, "data-ref")); name == "" && err == nil && p.Res != nil && i >= 0 && i < len(p.Res.Matrices) {
		name = p.Res.Matrices[i].Module // a row of the engine's pairs table
	}
	var m *report.AuditMatrix
	if p.Res != nil {
		for _, x := range p.Res.Matrices {
			if x.Module == name {
				m = x
			}
		}
	}
	if m == nil {
		return
	}
	p.Pair, p.PairFig = name, nil
	inView(ctx, "pair-detail")
	if len(m.Sigma) > 0 {
		drawn(ctx, &jobs.ChartSpec{Pair: m, Tol: p.Res.Summary.Tol}, func(f *jobs.Figure) {
			if p.Pair == name {
				p.PairFig = f
			}
		})
	}
}

// renderGlance is the whole adapter at a glance: a modules × layers
// heatmap of the metric chosen; a click on a cell opens its pair.
func (p *AuditPage) renderGlance() app.UI {
	var kv []string
	for _, f := range p.Charts {
		if f.ID == "pair-grid" {
			kv = append(kv, f.Key, f.Label)
		}
	}
	f := figureOf(p.Charts, "pair-grid", p.Metric)
	if f == nil {
		f = figureOf(p.Charts, "pair-grid", "")
	}
	if f == nil {
		return app.Text("")
	}
	return box("card",
		app.H2().Text("The adapter at a glance"),
		box("controls", app.Label().Text("Colour by "), choice("grid-metric", f.Key, setTo(&p.Metric), kv...)),
		app.Div().ID("pair-grid-box").Class("chart-box").OnClick(p.onPair).Body(figure(f)),
	)
}

// renderPair is the pair opened: its figures and its spectrum with the
// report's, the tolerance band and the rank cut.
func (p *AuditPage) renderPair(r *report.Audit) app.UI {
	var m *report.AuditMatrix
	for _, x := range r.Matrices {
		if x.Module == p.Pair {
			m = x
		}
	}
	if m == nil {
		return app.Text("")
	}
	what := fmt.Sprintf("%d × %d, r = %d, %s × %s, ‖A‖_F %.4g, ‖B‖_F %.4g", m.Out, m.In, m.Rank, m.DTypeA, m.DTypeB, m.NormA, m.NormB)
	if len(m.Sigma) == 0 {
		what += " — no spectrum (a quick audit computes none)"
		if m.Skipped != "" {
			what = what[:len(what)-len(" (a quick audit computes none)")] + ": " + m.Skipped
		}
	}
	return app.Div().Class("card").ID("pair-detail").Body(
		box("pair-head", app.H2().Text(clip(m.Module, 120)), button("pair-close", "", "Close", false, func(ctx app.Context, e app.Event) { p.Pair, p.PairFig = "", nil })),
		app.Div().Class("muted").Text(what),
		figure(p.PairFig),
	)
}
