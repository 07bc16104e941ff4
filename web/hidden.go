package web

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/source"
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
	Res    *compare.HiddenResult
	PageNo int
}

func (p *HiddenPage) OnInit() { p.Status = "idle" }

func (p *HiddenPage) Render() app.UI {
	return shell("hidden",
		app.H1().Text("Hidden states"),
		app.P().Class("lead").Text("Compares a server's hidden states with the references, record by record and layer by layer: token ids must match exactly, then cosine similarity, NMSE, max |Δ| and relative L2 error per captured layer (tolerances: cos ≥ 1 − 10⁻³, rel. L2 ≤ 1.6·10⁻²)."),
		app.Div().Class("card controls").Body(
			app.Button().ID("hidden-demo").Class("primary").Text("Demo: capture from the demo service").OnClick(p.onDemo).Disabled(p.Status == "running"),
			app.Input().ID("hidden-server").Type("url").Placeholder("decision server (default: this site's demo service)").Value(p.Server).OnChange(p.ValueTo(&p.Server)),
			app.Input().ID("hidden-token").Type("password").Placeholder("bearer token (optional)").Value(p.Token).OnChange(p.ValueTo(&p.Token)),
		),
		app.Div().Class("card controls").Body(
			app.Span().Text("Or compare two local folders:"),
			app.Label().Class("file").Body(app.Text("Reference folder…"), app.Input().ID("ref-folder").Type("file").Attr("webkitdirectory", "").OnChange(p.onPick("__clefcheckRef"))),
			app.Label().Class("file").Body(app.Text("Capture folder…"), app.Input().ID("cand-folder").Type("file").Attr("webkitdirectory", "").OnChange(p.onPick("__clefcheckCand"))),
			app.Button().ID("compare-folders").Text("Compare").OnClick(p.onFolders).Disabled(p.Status == "running"),
		),
		app.If(p.Status == "running", func() app.UI { return app.Div().Class("card").ID("hidden-progress").Text(p.Note) }),
		app.If(p.Status == "error", func() app.UI { return app.Div().Class("card error").ID("error").Text(clip(p.Err, 600)) }),
		app.If(p.Res != nil, func() app.UI { return p.renderResult() }),
	)
}

func (p *HiddenPage) renderResult() app.UI {
	r := p.Res
	s := r.Summary
	pages := max(1, (len(r.Records)+rowsPerPage-1)/rowsPerPage)
	pg := min(p.PageNo, pages-1)
	rows := r.Records[pg*rowsPerPage : min(len(r.Records), (pg+1)*rowsPerPage)]
	return app.Div().Body(
		app.Div().Class("card summary").Body(
			app.Span().ID("hidden-verdict").Class("badge "+r.Verdict).Text(strings.ToUpper(r.Verdict)),
			app.Span().Text(fmt.Sprintf(" %d records, %d compared, %d beyond tolerance; worst cosine %.6f, worst rel. L2 %.4g", s.Records, s.Compared, s.Failed, s.MinCosine, s.MaxRelL2)),
			app.If(p.Note != "", func() app.UI { return app.Div().Class("muted").Text(p.Note) }),
			driftPlot(s.ByLayer, s.Tol),
			app.Div().Class("actions").Body(
				app.Button().ID("hidden-json").Text("Download JSON").OnClick(func(ctx app.Context, e app.Event) {
					data, _ := json.MarshalIndent(p.Res, "", "  ")
					download("clefcheck-hidden.json", "application/json", data)
				}),
				app.Button().ID("hidden-md").Text("Download Markdown").OnClick(func(ctx app.Context, e app.Event) {
					download("clefcheck-hidden.md", "text/markdown", []byte(hiddenMarkdown(p.Res, p.Note)))
				}),
			),
		),
		app.Table().ID("hidden-records").Body(
			app.THead().Body(app.Tr().Body(app.Th().Text("record"), app.Th().Text("status"), app.Th().Text("worst layer"), app.Th().Text("cosine"), app.Th().Text("rel. L2"), app.Th().Text("NMSE"), app.Th().Text("detail"))),
			app.TBody().Body(app.Range(rows).Slice(func(i int) app.UI {
				rs := rows[i]
				cls := "ok"
				if rs.Status != "ok" {
					cls = "bad"
				}
				w := rs.Worst
				if w == nil {
					return app.Tr().Class(cls).Body(app.Td().Class("mono").Text(clip(rs.ID, 60)), app.Td().Text(rs.Status), app.Td().Text("–"), app.Td().Text("–"), app.Td().Text("–"), app.Td().Text("–"), app.Td().Class("muted").Text(clip(rs.Detail, 200)))
				}
				return app.Tr().Class(cls).Body(app.Td().Class("mono").Text(clip(rs.ID, 60)), app.Td().Text(rs.Status), app.Td().Text(fmt.Sprint(w.Layer)),
					app.Td().Text(fmt.Sprintf("%.6f", w.Cosine)), app.Td().Text(fmt.Sprintf("%.4g", w.RelL2)), app.Td().Text(fmt.Sprintf("%.3g", w.NMSE)), app.Td().Class("muted").Text(clip(rs.Detail, 200)))
			})),
		),
		app.Div().Class("pager").Body(
			app.Button().Text("‹").Disabled(pg == 0).OnClick(func(ctx app.Context, e app.Event) { p.PageNo = pg - 1 }),
			app.Span().Text(fmt.Sprintf(" page %d of %d ", pg+1, pages)),
			app.Button().Text("›").Disabled(pg >= pages-1).OnClick(func(ctx app.Context, e app.Event) { p.PageNo = pg + 1 }),
		),
	)
}

// driftPlot draws, per captured layer, the worst relative L2 error (bars)
// against its tolerance (a line), and marks the layers beyond tolerance.
func driftPlot(ls []compare.LayerStats, tol compare.HiddenTol) app.UI {
	if len(ls) == 0 {
		return app.Text("")
	}
	const w, h = 600.0, 120.0
	top := tol.MaxRelL2 * 2
	for _, l := range ls {
		top = max(top, l.RelL2)
	}
	bw := w / float64(len(ls))
	var els []app.UI
	for i, l := range ls {
		bh := h * l.RelL2 / top
		color := "#2b5bd7"
		if !l.OK {
			color = "#b3261e"
		}
		els = append(els, app.Elem("rect").XMLNS(svgNS).Attr("x", fmt.Sprintf("%.1f", float64(i)*bw+1)).Attr("y", fmt.Sprintf("%.1f", h-bh)).
			Attr("width", fmt.Sprintf("%.1f", bw-2)).Attr("height", fmt.Sprintf("%.1f", bh)).Attr("fill", color).Body(
			app.Elem("title").XMLNS(svgNS).Text(fmt.Sprintf("layer %d: rel. L2 %.4g, cos %.6f", l.Layer, l.RelL2, l.Cosine))))
	}
	ty := h - h*tol.MaxRelL2/top
	els = append(els, app.Elem("line").XMLNS(svgNS).Attr("x1", 0).Attr("x2", w).Attr("y1", fmt.Sprintf("%.1f", ty)).Attr("y2", fmt.Sprintf("%.1f", ty)).
		Attr("stroke", "#a86400").Attr("stroke-dasharray", "4 3"))
	return app.Div().Class("hist").Body(
		app.Elem("svg").XMLNS(svgNS).ID("drift-plot").Attr("width", w).Attr("height", h).Attr("viewBox", fmt.Sprintf("0 0 %g %g", w, h)).Body(els...),
		app.Div().Class("muted").Text(fmt.Sprintf("worst relative L2 error per layer, layers %d–%d (dashed: tolerance %.3g; red: beyond it)", ls[0].Layer, ls[len(ls)-1].Layer, tol.MaxRelL2)),
	)
}

func (p *HiddenPage) onPick(global string) app.EventHandler {
	return func(ctx app.Context, e app.Event) {
		app.Window().Set(global, ctx.JSSrc().Get("files"))
	}
}

// onFolders compares two chosen folders of <id>.safetensors files.
func (p *HiddenPage) onFolders(ctx app.Context, e app.Event) {
	ref, _, err := pickedFiles("__clefcheckRef")
	if err != nil {
		p.Status, p.Err = "error", "reference folder: "+err.Error()
		return
	}
	cand, _, err := pickedFiles("__clefcheckCand")
	if err != nil {
		p.Status, p.Err = "error", "capture folder: "+err.Error()
		return
	}
	p.Status, p.Err, p.Res, p.Note = "running", "", nil, "comparing the folders…"
	ctx.Async(func() {
		res, err := compare.Hidden(ref, ".", cand, ".", compare.HiddenTol{})
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Res, p.Status, p.Note, p.PageNo = res, "done", "local folders", 0
		})
	})
}

// onDemo sends the demo records with return_hidden to the server and
// compares the states with the demo world's reference, read by range from
// the site.
func (p *HiddenPage) onDemo(ctx app.Context, e app.Event) {
	server := p.Server
	if server == "" {
		server = strings.TrimSuffix(siteURL("./"), "/")
	}
	server, err := safeHTTP(server)
	if err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	p.Status, p.Err, p.Res, p.Note = "running", "", nil, "loading the demo records…"
	token := p.Token
	ctx.Async(func() {
		fail := func(err error) {
			ctx.Dispatch(func(ctx app.Context) { p.Status, p.Err = "error", err.Error() })
		}
		recs, _, err := loadDemo()
		if err != nil {
			fail(err)
			return
		}
		site, err := source.NewHTTP(siteURL("demo/"))
		if err != nil {
			fail(err)
			return
		}
		c := &decision.Client{BaseURL: server, Token: token, Timeout: 60 * time.Second}
		done := 0
		outs := decision.Run(context.Background(), c, recs, decision.RunOptions{Concurrency: 2, Hidden: true, OnOutcome: func(o *decision.Outcome) {
			ctx.Dispatch(func(ctx app.Context) {
				done++
				p.Note = fmt.Sprintf("captured %d of %d records from %s…", done, len(recs), server)
			})
		}})
		cand := map[string]*refs.Hidden{}
		var ids, failed []string
		for _, o := range outs {
			ids = append(ids, o.Record.ID)
			h, err := o.HiddenStates()
			if o.Err != nil {
				failed = append(failed, o.Record.ID+": "+o.Err.Error())
			} else if err != nil {
				failed = append(failed, o.Record.ID+": "+err.Error())
			} else if h != nil {
				cand[h.ID] = h
			}
		}
		var candIDs []string
		for id := range cand {
			candIDs = append(candIDs, id)
		}
		res := compare.HiddenOf(ids, candIDs,
			func(id string) (*refs.Hidden, error) {
				return refs.ReadHidden(site, path.Join("reference/hidden", refs.FileName(id)))
			},
			func(id string) (*refs.Hidden, error) { return cand[id], nil },
			compare.HiddenTol{})
		note := fmt.Sprintf("captured live from %s; reference from the demo world", server)
		if len(failed) > 0 {
			note += fmt.Sprintf("; %d requests failed (first: %s)", len(failed), clip(failed[0], 200))
		}
		ctx.Dispatch(func(ctx app.Context) { p.Res, p.Status, p.Note, p.PageNo = res, "done", note, 0 })
	})
}

// hiddenMarkdown renders a hidden-state comparison as Markdown.
func hiddenMarkdown(r *compare.HiddenResult, note string) string {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "# clefcheck: hidden states\n\n**Verdict: %s** — %d records, %d compared, %d beyond tolerance (cos ≥ %g, rel. L2 ≤ %g)\n\n%s\n\n",
		strings.ToUpper(r.Verdict), s.Records, s.Compared, s.Failed, s.Tol.MinCosine, s.Tol.MaxRelL2, note)
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
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(rs.ID), rs.Status, layer, cos, rel, mdCell(rs.Detail))
	}
	return b.String()
}

// mdCell keeps a table cell on one line and its pipes escaped.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(clip(s, 300), "|", "\\|"), "\n", " ")
}
