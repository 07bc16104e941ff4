package web

import (
	"context"
	"fmt"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/progress"
)

// noDigest is the Audit page's "skip the files' SHA-256" box
// (jobs.Spec.NoDigest).
var noDigest bool

// CacheBar shows the engine's cache of the byte ranges read from URLs
// (kept in the browser's private file system under their commit or ETag)
// with a button that clears it, and the audit's digest switch. The engine
// worker answers a cache job; the page holds no engine code.
type CacheBar struct {
	app.Compo
	Status string // the audit's: the bar looks again when it changes
	info   *jobs.CacheInfo
	err    string
	ui     app.Context // the bar's own (see dispatch): the clear button's would be dropped once it is mounted anew
}

func (c *CacheBar) OnMount(ctx app.Context)  { c.ui = ctx; c.refresh(false) }
func (c *CacheBar) OnUpdate(ctx app.Context) { c.ui = ctx; c.refresh(false) }

func (c *CacheBar) refresh(clear bool) {
	ctx := c.ui
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindCache, Clear: clear}, nil)
		ctx.Dispatch(func(ctx app.Context) {
			c.info, c.err = nil, ""
			switch {
			case err != nil:
				c.err = err.Error()
			case out.Cache != nil:
				c.info = out.Cache
			}
		})
	})
}

func (c *CacheBar) Render() app.UI {
	text := "Cache: …"
	switch i := c.info; {
	case c.err != "":
		text = "Cache: " + clip(c.err, 200)
	case i != nil && i.On:
		text = fmt.Sprintf("Cache: %s of %s held (%d ranges)", progress.Bytes(i.Bytes), progress.Bytes(i.Max), i.Entries)
	case i != nil:
		text = "Cache off: " + clip(i.Why, 200)
	}
	return app.Div().Class("card controls muted").ID("cache").Body(
		app.Span().ID("cache-size").Text(text),
		app.Button().ID("cache-clear").Text("Clear the cache").Disabled(c.info == nil || !c.info.On).
			OnClick(func(ctx app.Context, e app.Event) { c.refresh(true) }),
		app.Label().Body(
			app.Input().Type("checkbox").ID("no-digest").Checked(noDigest).
				OnChange(func(ctx app.Context, e app.Event) { noDigest = ctx.JSSrc().Get("checked").Bool() }),
			app.Text(" skip the files' SHA-256"),
		),
	)
}
