package web

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// operator is the operator's inputs on the Hidden states and Decisions
// pages: the records (a URL — http(s) or hf:// — or local files), the
// references (the card's, from the claims profile; a source; or a folder
// with answers/ and hidden/, picked or dropped) and the Hub's endpoint.
type operator struct {
	RecURL, RecNote string // a records URL, or the local records chosen
	RefURL, RefNote string // a references source, or the local folder chosen
	Endpoint        string
	Claims          string // whose references are "the card's"
	CardRef         string // the claims profile's reference.source
}

// The JS globals the operator's local files are stashed in.
const (
	recGlobal  = "__clefcheckRecords"
	refsGlobal = "__clefcheckRefs"
)

// fromQuery fills the inputs from a page's link.
func (o *operator) fromQuery(q url.Values) {
	o.RecURL, o.RefURL, o.Endpoint = clip(q.Get("records"), 2000), clip(q.Get("reference"), 2000), clip(q.Get("endpoint"), 500)
	if o.Claims = clip(q.Get("claims"), 100); o.Claims == "" {
		o.Claims = "clef-lora-r256"
	}
}

// query is the inputs as link parameters.
func (o *operator) query() []string {
	return []string{"records", o.RecURL, "reference", o.RefURL, "endpoint", o.Endpoint}
}

// loadCard asks the engine where the claims profile's references live.
func (o *operator) loadCard(ctx app.Context) {
	name := o.Claims
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindClaims}, nil)
		if err != nil {
			return
		}
		for _, pi := range out.Profiles {
			if pi.Name == name && pi.Reference != "" {
				ref := pi.Reference
				dispatch(ctx, func(ctx app.Context) { o.CardRef = ref })
			}
		}
	})
}

// set is a change handler writing an input's value to s.
func set(s *string) app.EventHandler {
	return func(ctx app.Context, e app.Event) { *s = strings.TrimSpace(ctx.JSSrc().Get("value").String()) }
}

func (o *operator) render() app.UI {
	return app.Div().Class("card controls").ID("operator").Body(
		labelled("records-url", "Records", field("records-url", "text", "a .jsonl URL or hf://owner/name/file.jsonl", o.RecURL, set(&o.RecURL))),
		picker("records-files", "Records files…", false, o.onPick(recGlobal, &o.RecNote, &o.RecURL)),
		app.If(o.RecNote != "", func() app.UI { return app.Span().Class("muted").ID("records-note").Text(clip(o.RecNote, 120)) }),
		button("card-refs", "", "The card's references", o.CardRef == "", func(ctx app.Context, e app.Event) {
			o.RefURL, o.RefNote = o.CardRef, ""
		}),
		labelled("ref-url", "References", field("ref-url", "text", "hf://owner/name/reference, or a folder URL", o.RefURL, set(&o.RefURL))),
		picker("refs-folder", "Reference folder…", true, o.onPick(refsGlobal, &o.RefNote, &o.RefURL)),
		app.Div().ID("refs-drop").Class("drop").Text(firstNonEmpty(o.RefNote, "…or drop the folder with answers/ and hidden/ here")).
			On("dragover", func(ctx app.Context, e app.Event) { e.PreventDefault() }).
			On("drop", func(ctx app.Context, e app.Event) {
				e.PreventDefault()
				dropped(ctx, e, refsGlobal, func(names []string, err error) {
					o.RefNote, o.RefURL = pickNote(names, err), ""
				})
			}),
		labelled("op-endpoint", "Hub endpoint", field("op-endpoint", "url", "https://huggingface.co (default)", o.Endpoint, set(&o.Endpoint))),
	)
}

// onPick stashes an input's files under global and notes what was chosen
// (a URL given before is dropped).
func (o *operator) onPick(global string, note, url *string) app.EventHandler {
	return func(ctx app.Context, e app.Event) {
		app.Window().Set(global, ctx.JSSrc().Get("files"))
		names, err := pickedNames(global)
		*note, *url = pickNote(names, err), ""
	}
}

func pickNote(names []string, err error) string {
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d local files (%s)", len(names), clip(strings.Join(names, ", "), 100))
}

// inputs are the records and the references given (nil: not given).
func (o *operator) inputs() (rec, ref *jobs.Input) {
	switch {
	case o.RecURL != "":
		rec = hubInput(o.RecURL, o.Endpoint)
	case o.RecNote != "":
		rec = &jobs.Input{Files: recGlobal}
	}
	switch {
	case o.RefURL != "":
		ref = hubInput(o.RefURL, o.Endpoint)
	case o.RefNote != "":
		ref = &jobs.Input{Files: refsGlobal}
	}
	return rec, ref
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
