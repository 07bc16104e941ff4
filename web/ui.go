package web

import (
	"fmt"
	"strings"
	"sync"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Small builders shared by the pages: one call instead of a chain of
// builder calls at every use, which keeps app.wasm small (every call site
// costs code in Go's WebAssembly).

const svgNS = "http://www.w3.org/2000/svg"

// svg is an SVG element with attributes given as name, value pairs.
func svg(name string, kv ...any) app.HTMLElem {
	e := app.Elem(name).XMLNS(svgNS)
	for i := 0; i+1 < len(kv); i += 2 {
		e = e.Attr(kv[i].(string), kv[i+1])
	}
	return e
}

// muted is a table cell shown muted.
type muted string

// head is a table's header row.
func head(cols ...string) app.UI {
	ths := make([]app.UI, len(cols))
	for i, c := range cols {
		ths[i] = app.Th().Text(c)
	}
	return app.THead().Body(app.Tr().Body(ths...))
}

// row is a table row: a string is a text cell, a muted one is muted, an
// app.UI goes in its cell as it is; the first cell is monospace (an id).
func row(class string, cells ...any) app.UI {
	tds := make([]app.UI, len(cells))
	for i, c := range cells {
		td := app.Td()
		if i == 0 {
			td = td.Class("mono")
		}
		switch v := c.(type) {
		case string:
			td = td.Text(v)
		case muted:
			td = td.Class("muted").Text(string(v))
		case app.UI:
			td = td.Body(v)
		}
		tds[i] = td
	}
	tr := app.Tr().Body(tds...)
	if class != "" {
		tr = tr.Class(class)
	}
	return tr
}

// paged is the page pg (clamped) of n items, rowsPerPage to a page: its
// bounds, the page shown and the number of pages.
func paged(n, pg int) (lo, hi, page, pages int) {
	pages = max(1, (n+rowsPerPage-1)/rowsPerPage)
	page = max(0, min(pg, pages-1))
	return page * rowsPerPage, min(n, (page+1)*rowsPerPage), page, pages
}

// pager moves between pages; move is given −1 or +1 (the handlers read
// no page of their own: go-app keeps a button's first handler).
func pager(id string, pg, pages int, move func(app.Context, int)) app.UI {
	return box("pager",
		button("", "", "‹ previous", pg == 0, func(ctx app.Context, e app.Event) { move(ctx, -1) }),
		app.Span().ID(id).Text(fmt.Sprintf(" page %d of %d ", pg+1, pages)),
		button("", "", "next ›", pg >= pages-1, func(ctx app.Context, e app.Event) { move(ctx, 1) }),
	)
}

// field is a text-like input (url, password, text, number).
func field(id, typ, placeholder string, value any, h app.EventHandler) app.HTMLInput {
	return app.Input().ID(id).Type(typ).Placeholder(placeholder).Value(value).OnChange(h)
}

// picker is a labelled file input: several files, or a folder.
func picker(id, label string, folder bool, h app.EventHandler) app.UI {
	in := app.Input().ID(id).Type("file").OnChange(h)
	if folder {
		// go-app drops an attribute whose value is empty: "true" makes
		// the boolean attribute present, so the chooser opens folders.
		in = in.Attr("webkitdirectory", true)
	} else {
		in = in.Multiple(true)
	}
	return app.Label().Class("file").Body(app.Text(label), in)
}

// badge is a result's verdict as its badge: PASS, WARN, FAIL, or ERROR
// (grey: the check could not be completed, which says nothing about the
// artifact).
func badge(id string, v report.Verdict) app.UI {
	return app.Span().ID(id).Class("badge " + string(v)).Text(v.Label())
}

// couldNot says, for a result whose verdict is error, what could not be
// done and how to fix it: its findings of severity error, alike ones (the
// same code and message, e.g. every record of a batch to a dead server)
// shown once with their count. The engine ends a message with its hint
// after " — ". Alike means the same cause: a message is compared without
// its subject and byte ranges (a URL that changed mid-audit stops every
// pair's read, each at its own bytes: one entry, not 186).
func couldNot(fs []report.Finding) app.UI {
	var keys []string
	n := map[string]int{}
	first := map[string]report.Finding{}
	for _, f := range fs {
		if f.Severity != report.Unchecked {
			continue
		}
		k := string(f.Code) + "\x00" + report.Cause(f)
		if n[k]++; n[k] == 1 {
			keys, first[k] = append(keys, k), f
		}
	}
	items := make([]app.UI, len(keys))
	for i, k := range keys {
		f := first[k]
		msg, hint := f.Message, ""
		if j := strings.LastIndex(msg, " — "); j >= 0 {
			msg, hint = msg[:j], "How to fix: "+clip(msg[j+len(" — "):], 300)
		}
		subj := clip(f.Subject, 100)
		if n[k] > 1 {
			subj += fmt.Sprintf(" (and %d more alike)", n[k]-1)
		}
		items[i] = app.Li().Body(app.Code().Text(f.Code), span("subject", subj),
			app.Div().Text(clip(msg, 400)), app.Div().Class("hint").Text(hint))
	}
	return app.Div().Class("card error").ID("could-not").Body(
		app.H2().Text("The check could not be completed"),
		app.Ul().Class("could").Body(items...),
	)
}

// errorCard shows an error (clipped: it may quote a file or a server).
func errorCard(msg string) app.UI {
	return app.Div().Class("card error").ID("error").Text(clip(msg, 600))
}

// choice is a select of value, label pairs.
func choice(id, current string, set func(ctx app.Context, v string), kv ...string) app.UI {
	opts := make([]app.UI, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i]
		if v == "" {
			v = emptyChoice
		}
		opts = append(opts, app.Option().Value(v).Text(kv[i+1]).Selected(kv[i] == current))
	}
	return app.Select().ID(id).OnChange(func(ctx app.Context, e app.Event) {
		v := ctx.JSSrc().Get("value").String()
		if v == emptyChoice {
			v = ""
		}
		set(ctx, v)
		e.StopImmediatePropagation()
	}).Body(opts...)
}

// emptyChoice is the value an option for "" carries: go-app writes no
// value attribute for an empty value, and an option without one has its
// text for value — choosing "(none)" then asked for a claims profile
// named "(none)", and "all layers" filtered by a layer of that name.
const emptyChoice = "\x00none"

// setTo sets *p to the chosen value (choice).
func setTo[T ~string](p *T) func(app.Context, string) {
	return func(_ app.Context, v string) { *p = T(v) }
}

// routed is the context of the page go-app shows (one at a time, in the
// browser), kept by bindPage when the page mounts or is navigated to.
var routed struct {
	sync.Mutex
	ui app.Context
	ok bool
}

// bindPage keeps the page's own context (ctx of its OnMount or OnNav) for
// dispatch. In the browser only: a server renders many pages at once.
func bindPage(ctx app.Context) {
	if !app.IsClient {
		return
	}
	routed.Lock()
	routed.ui, routed.ok = ctx, true
	routed.Unlock()
}

// dispatch runs f on the UI goroutine and updates the page. Work started
// by an element's event (a click) reports through the page's own context,
// not through that element's: go-app drops, without a word, a dispatch
// whose source element is no longer mounted, and it mounts an element
// anew whenever something conditional before it appears or goes (the
// Demo page's server field on the first render after OnNav, or when the
// user switches "Decided by"). A decision that came back was then never
// shown, and the page said "deciding…" forever. A component's own context
// (OnMount, OnNav, OnUpdate) is used as it is.
//
// dispatch and valueTo are kept out of line: go-app inlines ctx.Dispatch
// and Compo.ValueTo, and each inlined copy (the closure copies the whole
// Context) costs app.wasm about a kilobyte per call site.
//
//go:noinline
func dispatch(ctx app.Context, f func(app.Context)) {
	if _, own := ctx.Src().(app.Composer); !own {
		routed.Lock()
		if routed.ok {
			ctx = routed.ui
		}
		routed.Unlock()
	}
	ctx.Dispatch(f)
}

//go:noinline
func valueTo(v any) app.EventHandler {
	var c app.Compo
	return c.ValueTo(v)
}

// button is a button: one call instead of a chain at every use.
func button(id, class, text string, disabled bool, h app.EventHandler) app.UI {
	b := app.Button().Text(text).OnClick(h).Disabled(disabled)
	if id != "" {
		b = b.ID(id)
	}
	if class != "" {
		b = b.Class(class)
	}
	return b
}

// box is a div of class cls around els; span a span of class cls with
// text (one call each instead of a chain).
func box(cls string, els ...app.UI) app.UI { return app.Div().Class(cls).Body(els...) }

func span(cls, text string) app.UI { return app.Span().Class(cls).Text(text) }

// clearField empties the input id in place: go-app drops a value attribute
// set to "", which leaves what the user typed in the field.
func clearField(id string) {
	if el := app.Window().GetElementByID(id); el.Truthy() {
		el.Set("value", "")
	}
}
