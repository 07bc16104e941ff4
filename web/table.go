package web

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// The result tables: the engine makes them (report.Table: every cell
// formatted, every column explained), keeps them, and answers the page of
// a view (sorted, filtered) or its CSV with a table job; the pages only
// draw the page: a sort button with a tooltip on every header (aria-sort),
// filters by layer, group, text and failing rows, a pager, a CSV download
// of what the view keeps and a legend line per column.

var (
	pagesMu sync.Mutex
	pages   = map[string]*report.TablePage{} // the page of each table shown
	// wants is the view last asked for, before the engine answers it: two
	// changes in a row build on each other.
	wants = map[string]report.View{}
)

// keepTables keeps the table pages a job answered.
func keepTables(out *jobs.Output) {
	if out == nil {
		return
	}
	fresh := out.Audit != nil || out.Rebuild != nil || out.Hidden != nil || out.Decisions != nil || out.Codes != nil
	pagesMu.Lock()
	defer pagesMu.Unlock()
	for _, t := range out.Tables {
		pages[t.ID] = t
		if fresh {
			delete(wants, t.ID)
		}
	}
}

// viewOf is the view of table id last asked for.
func viewOf(id string) report.View {
	pagesMu.Lock()
	defer pagesMu.Unlock()
	if v, ok := wants[id]; ok {
		return v
	}
	if t := pages[id]; t != nil {
		return t.View
	}
	return report.View{}
}

func pageOf(id string) *report.TablePage {
	pagesMu.Lock()
	defer pagesMu.Unlock()
	return pages[id]
}

// show asks the engine for the table id as v shows it (its CSV, to
// download, when csv), and redraws.
func show(ctx app.Context, id string, v report.View, csv bool) {
	if !csv {
		pagesMu.Lock()
		wants[id] = v
		pagesMu.Unlock()
	}
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindTable, Table: id, View: &v, CSV: csv}, nil)
		dispatch(ctx, func(ctx app.Context) {
			if err == nil && csv {
				download(pageOf(id).Name+".csv", "text/csv", []byte(out.CSV))
			}
		})
	})
}

// grid draws the table id; drawn gives the content of the columns the
// page draws (kind "spectrum"), given the row. The provenance's tables
// are plain: no filters, no sorting, no legend.
func grid(id string, drawn func(r report.Row) app.UI) app.UI {
	t := pageOf(id)
	if t == nil {
		return app.Text("")
	}
	v := t.View
	// go-app keeps an element's first handler when a later one comes from
	// the same function literal: a handler reads the view when it runs.
	pick := func(f func(s string, w *report.View)) func(app.Context, string) {
		return func(ctx app.Context, v string) {
			w := viewOf(id)
			f(v, &w)
			show(ctx, id, w, false)
		}
	}
	set := func(f func(s string, w *report.View)) app.EventHandler {
		return func(ctx app.Context, e app.Event) { pick(f)(ctx, ctx.JSSrc().Get("value").String()) }
	}
	plain := t.ID == "provenance-info" || t.ID == "provenance-files"
	var filters []app.UI
	if !plain {
		if len(t.Layers) > 1 {
			kv := []string{"", "all layers"}
			for _, l := range t.Layers {
				kv = append(kv, strconv.Itoa(l), "layer "+strconv.Itoa(l))
			}
			filters = append(filters, labelled(id+"-layer", "Layer", choice(id+"-layer", v.Layer, pick(func(s string, w *report.View) { w.Layer, w.Page = s, 0 }), kv...)))
		}
		if len(t.Groups) > 1 && t.Group != "" {
			kv := []string{"", "all " + t.Group + "s"}
			for _, g := range t.Groups {
				kv = append(kv, g, g)
			}
			filters = append(filters, labelled(id+"-module", strings.ToUpper(t.Group[:1])+t.Group[1:], choice(id+"-module", v.Module, pick(func(s string, w *report.View) { w.Module, w.Page = s, 0 }), kv...)))
		}
		filters = append(filters,
			labelled(id+"-search", "Search", app.Input().ID(id+"-search").Type("search").Placeholder("text in any column").Value(v.Query).
				OnChange(set(func(s string, w *report.View) { w.Query, w.Page = s, 0 }))),
			app.If(id != "codes", func() app.UI {
				return button(id+"-failing", onOff[v.Failing], failingLabel(v.Failing, t.Failing), t.Failing == 0 && !v.Failing, set(func(_ string, w *report.View) { w.Failing, w.Page = !w.Failing, 0 }))
			}),
			button(id+"-csv", "", "Download CSV", t.Shown == 0, func(ctx app.Context, e app.Event) { show(ctx, id, viewOf(id), true) }),
			span("muted", fmt.Sprintf("%d of %d rows", t.Shown, t.Total)),
		)
	}
	ths := make([]app.UI, len(t.Cols))
	legend := make([]app.UI, 0, len(t.Cols))
	for i, c := range t.Cols {
		i, name, sort := i, c.Name, "none"
		if v.Sort == i+1 {
			sort, name = "ascending", name+" ▲"
			if v.Desc {
				sort, name = "descending", c.Name+" ▼"
			}
		}
		th := app.Th().Title(c.Tip)
		if plain || c.Kind == "spectrum" {
			ths[i] = th.Text(c.Name)
			if !plain {
				legend = append(legend, app.Li().Body(span("k", c.Name), app.Text(" "+c.Tip)))
			}
			continue
		}
		ths[i] = th.Attr("aria-sort", sort).Body(button("", "sort", name, false, set(func(_ string, w *report.View) {
			w.Desc = w.Sort == i+1 && !w.Desc
			w.Sort, w.Page = i+1, 0
		})))
		legend = append(legend, app.Li().Body(span("k", c.Name), app.Text(" "+c.Tip)))
	}
	rows := t.Rows
	return app.Div().Class("grid").Body(
		box("filters controls", filters...),
		box("scroll", app.Table().ID(id).Body(
			app.THead().Body(app.Tr().Body(ths...)),
			app.TBody().Body(app.Range(rows).Slice(func(i int) app.UI { return gridRow(t, rows[i], drawn) })),
		)),
		app.If(t.Pages > 1, func() app.UI {
			return pager(id+"-page", v.Page, t.Pages, func(ctx app.Context, d int) {
				w := viewOf(id)
				w.Page += d
				show(ctx, id, w, false)
			})
		}),
		app.P().Class("muted").Text(t.Note),
		app.Ul().Class("legend").Body(legend...),
	)
}

var onOff = map[bool]string{true: "active"}

// failingLabel is the failing filter's button: what a click does.
func failingLabel(on bool, n int) string {
	if on {
		return "show all rows"
	}
	return fmt.Sprintf("show failing only (%d)", n)
}

// gridRow is a row's cells: a code links to the codes page, a drawn
// column is the page's; the first cell is monospace.
func gridRow(t *report.TablePage, r report.Row, drawn func(report.Row) app.UI) app.UI {
	tds := make([]app.UI, len(r.Cells))
	for i, c := range r.Cells {
		td := app.Td()
		if i == 0 {
			td = td.Class("mono")
		}
		switch k := t.Cols[i].Kind; {
		case k == "code":
			tds[i] = td.Body(codeLink(report.Code(c.T)))
		case k == "spectrum" && drawn != nil:
			tds[i] = td.Body(drawn(r))
		default:
			tds[i] = td.Text(c.T)
		}
	}
	// data-ref: the row's item in its result (a pair, a record), for the
	// pages' click handlers (dataOf), whatever the sort and the filter.
	tr := app.Tr().Attr("data-ref", r.Ref).Body(tds...)
	if r.Class != "" {
		tr = tr.Class(r.Class)
	}
	if t.ID == "codes" {
		tr = tr.ID(r.Cells[0].T)
	}
	return tr
}

// labelled puts a visible label for the control id before it.
func labelled(id, label string, el app.UI) app.UI {
	return app.Span().Class("fld").Body(app.Label().For(id).Text(label), el)
}

// codeLink links a finding code to its entry on the codes page.
func codeLink(c report.Code) app.UI {
	return app.A().Href(route("/codes") + "#" + string(c)).Body(app.Code().Text(c))
}
