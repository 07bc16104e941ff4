package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/model"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// DemoPage (at /embed) is the compact page for embedding in a model card
// (an iframe): a prompt and options → a decision with probabilities, from a
// decision server (by default this site's demo service) or from the demo
// world's model run in the browser, so that it works on a static site with
// no server. Query parameters prompt, options (comma-separated) and server
// fill it in.
type DemoPage struct {
	app.Compo
	Prompt  string
	Options string
	Server  string
	Where   string // server | browser
	Status  string // idle | running | done | error
	Err     string
	Choice  string
	Opts    []string
	Probs   []float64
	MS      float64
}

func (p *DemoPage) OnNav(ctx app.Context) {
	q := ctx.Page().URL().Query()
	p.Prompt = clip(q.Get("prompt"), 4000)
	if p.Prompt == "" {
		p.Prompt = "Which planet is closest to the Sun? A) Venus B) Earth C) Mars D) Mercury"
	}
	p.Options = clip(q.Get("options"), 1000)
	if p.Options == "" {
		p.Options = "A, B, C, D"
	}
	if s, err := safeHTTP(q.Get("server")); err == nil {
		p.Server = s
	}
	p.Where, p.Status = "server", "idle"
}

func (p *DemoPage) Render() app.UI {
	return app.Div().Class("embed").Body(
		app.Div().Class("embed-head").Body(
			app.Span().Class("brand").Text("clefcheck"),
			app.Span().Class("muted").Text(" · a decision from Clef's backbone + scoring head"),
		),
		app.Textarea().ID("demo-prompt").Rows(3).Text(p.Prompt).OnChange(p.ValueTo(&p.Prompt)),
		app.Div().Class("controls").Body(
			app.Input().ID("demo-options").Value(p.Options).Placeholder("options, comma-separated").OnChange(p.ValueTo(&p.Options)),
			app.Select().ID("demo-where").OnChange(p.ValueTo(&p.Where)).Body(
				app.Option().Value("server").Text("decision server").Selected(p.Where == "server"),
				app.Option().Value("browser").Text("demo model, in this browser").Selected(p.Where == "browser"),
			),
			app.If(p.Where == "server", func() app.UI {
				return app.Input().ID("demo-server").Type("url").Placeholder("decision server URL (default: this site's demo service)").Value(p.Server).OnChange(p.ValueTo(&p.Server))
			}),
			app.Button().ID("demo-decide").Class("primary").Text("Decide").OnClick(p.onDecide).Disabled(p.Status == "running"),
		),
		app.If(p.Status == "running", func() app.UI { return app.Div().Class("muted").Text("deciding…") }),
		app.If(p.Status == "error", func() app.UI { return app.Div().Class("error").ID("error").Text(clip(p.Err, 400)) }),
		app.If(p.Status == "done", func() app.UI {
			return app.Div().ID("demo-result").Body(
				app.Div().Body(app.Span().Class("badge pass").ID("demo-choice").Text(clip(p.Choice, 60)), app.Span().Class("muted").Text(fmt.Sprintf("  in %.0f ms", p.MS))),
				app.Range(p.Opts).Slice(func(i int) app.UI {
					return app.Div().Class("bar").Body(
						app.Span().Class("label").Text(clip(p.Opts[i], 40)),
						app.Span().Class("fill").Style("width", fmt.Sprintf("%.1f%%", 100*p.Probs[i])),
						app.Span().Class("pct").Text(fmt.Sprintf("%.1f%%", 100*p.Probs[i])),
					)
				}),
			)
		}),
	)
}

func splitOptions(s string) []string {
	var out []string
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			out = append(out, o)
		}
	}
	return out
}

func (p *DemoPage) onDecide(ctx app.Context, e app.Event) {
	req := &decision.Request{ID: "demo", Prompt: p.Prompt, Options: splitOptions(p.Options)}
	if err := req.Validate(); err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	p.Status, p.Err = "running", ""
	where, server := p.Where, p.Server
	if server == "" {
		server = strings.TrimSuffix(siteURL("./"), "/")
	}
	ctx.Async(func() {
		start := time.Now()
		var choice string
		var probs []float64
		var err error
		if where == "browser" {
			var a *refs.Answer
			if a, err = decideInBrowser(req.ID, req.Prompt, req.Options); err == nil {
				choice, probs = a.Choice, a.Probs
			}
		} else {
			var u string
			if u, err = safeHTTP(server); err == nil {
				var r *decision.Response
				r, err = (&decision.Client{BaseURL: u, Timeout: 60 * time.Second}).Decide(context.Background(), req)
				if err == nil {
					choice, probs = r.Choice, r.Probs
				}
			}
		}
		ms := float64(time.Since(start).Microseconds()) / 1000
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Status, p.Choice, p.Opts, p.Probs, p.MS = "done", choice, req.Options, probs, ms
		})
	})
}

var (
	demoModelOnce sync.Once
	demoModel     *model.Model
	demoModelErr  error
)

// decideInBrowser runs the demo world's model here: the base checkpoint
// with the adapter applied at run time, read from the site by range.
func decideInBrowser(id, prompt string, options []string) (*refs.Answer, error) {
	demoModelOnce.Do(func() {
		base, err1 := source.NewHTTP(siteURL("demo/base/"))
		ad, err2 := source.NewHTTP(siteURL("demo/adapter/"))
		root, err3 := source.NewHTTP(siteURL("demo/"))
		if demoModelErr = firstErr(err1, err2, err3); demoModelErr != nil {
			return
		}
		head, err := model.LoadHead(root)
		if err != nil {
			demoModelErr = err
			return
		}
		demoModel, demoModelErr = model.Load(base, head, model.Options{Adapter: ad})
	})
	if demoModelErr != nil {
		return nil, fmt.Errorf("loading the demo model: %v", demoModelErr)
	}
	res, err := demoModel.Forward(model.Tokenize(prompt, options), options)
	if err != nil {
		return nil, err
	}
	return &refs.Answer{ID: id, Options: options, Logits: res.Logits, Probs: res.Probs, Choice: options[res.Choice]}, nil
}
