package web

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// DemoPage (at /embed) is the compact page for embedding in a model card
// (an iframe): a prompt and options → a decision with probabilities, from a
// decision server (by default this site's demo service) or from the demo
// world's model run in the browser, so that it works on a static site with
// no server. Query parameters prompt, options (comma-separated) and server
// fill it in; timeout (seconds, 5 to 600) is how long a decision may take
// before the page asks again (45 s in the browser, 90 s from a server).
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
	Timeout int    // seconds a decision may take (0: the default)
	Note    string // what the page did to get the decision (asked again)
	Link    string // the page's link, once copied
	service *probe // whether this site runs a decision service (nil: not asked)
}

// probe is the answer to whether the site runs the demo decision service:
// has is set before done is closed.
type probe struct {
	done chan struct{}
	has  bool
}

// OnInit gives the page the state OnNav gives it by default, before its
// first render: the elements of that render stay the same nodes after
// OnNav (go-app mounts an element anew when something before it appears).
func (p *DemoPage) OnInit() { p.Where, p.Status = "server", "idle" }

func (p *DemoPage) OnNav(ctx app.Context) {
	bindPage(ctx)
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
	p.Timeout = 0
	if n, err := strconv.Atoi(q.Get("timeout")); err == nil && n >= 5 && n <= 600 {
		p.Timeout = n
	}
	p.Where, p.Status, p.service = "server", "idle", nil
	if q.Get("where") == "browser" {
		p.Where = "browser"
	} else if p.Server == "" {
		// On a site with no decision service (a static host), decide with
		// the demo model in this browser; a decision asked before the
		// answer waits for it (onDecide).
		pr := &probe{done: make(chan struct{})}
		p.service = pr
		ctx.Async(func() {
			pr.has = siteHasService()
			close(pr.done)
			if !pr.has {
				dispatch(ctx, func(ctx app.Context) {
					if p.service == pr {
						p.Where = "browser"
					}
				})
			}
		})
	}
}

func (p *DemoPage) Render() app.UI {
	return box("embed",
		box("embed-head",
			span("brand", "clefcheck"),
			span("muted", " · a decision from Clef's backbone + scoring head · "),
			app.A().ID("embed-full").Href(route("/")).Target("_blank").Text("the full tool ↗"),
		),
		app.Label().For("demo-prompt").Class("muted").Text("Prompt"),
		app.Textarea().ID("demo-prompt").Rows(3).Text(p.Prompt).OnChange(valueTo(&p.Prompt)),
		box("controls",
			labelled("demo-options", "Options", app.Input().ID("demo-options").Value(p.Options).Placeholder("options, comma-separated").OnChange(valueTo(&p.Options))),
			labelled("demo-where", "Decided by", choice("demo-where", p.Where, setTo(&p.Where), "server", "decision server", "browser", "demo model, in this browser")),
			app.If(p.Where == "server", func() app.UI {
				return labelled("demo-server", "Server", app.Input().ID("demo-server").Type("url").Placeholder("decision server URL (default: this site's demo service)").Value(p.Server).OnChange(valueTo(&p.Server)))
			}),
			button("demo-decide", "primary", "Decide", p.Status == "running", p.onDecide),
			shareLink(p.Link, func(l string) { p.Link = l }, p.link),
		),
		app.If(p.Status == "running", func() app.UI { return app.Div().Class("muted").Text("deciding…") }),
		app.If(p.Status == "error", func() app.UI { return app.Div().Class("error").ID("error").Text(clip(p.Err, 400)) }),
		app.If(p.Status == "done", func() app.UI {
			return app.Div().ID("demo-result").Body(
				app.Div().Body(app.Span().Class("badge answer").ID("demo-choice").Title("the option the model chose (an answer, not a verdict)").Text(clip(p.Choice, 60)), app.Span().Class("muted").Text(fmt.Sprintf("  in %.0f ms", p.MS))),
				app.If(p.Note != "", func() app.UI { return app.Div().Class("muted").ID("demo-note").Text(p.Note) }),
				app.Range(p.Opts).Slice(func(i int) app.UI {
					return box("bar",
						app.Span().Class("label").Text(clip(p.Opts[i], 40)),
						app.Span().Class("fill").Style("width", fmt.Sprintf("%.1f%%", 100*p.Probs[i])),
						app.Span().Class("pct").Text(fmt.Sprintf("%.1f%%", 100*p.Probs[i])),
					)
				}),
			)
		}),
	)
}

// link is the widget's link with its prompt, options and server (or
// where=browser): what a model card or another page embeds.
func (p *DemoPage) link() string {
	where := ""
	if p.Where == "browser" {
		where = "browser"
	}
	server := ""
	if where == "" {
		server = strings.TrimSpace(p.Server)
	}
	timeout := ""
	if p.Timeout > 0 {
		timeout = strconv.Itoa(p.Timeout)
	}
	return linkTo("embed", "prompt", p.Prompt, "options", p.Options, "server", server, "where", where, "timeout", timeout)
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
	spec := &jobs.Spec{Kind: jobs.KindDecide, Prompt: p.Prompt, Options: splitOptions(p.Options)}
	// This site's own service, not yet known to exist (a click right after
	// the page opened): the decision waits for the answer (at most the
	// probe's 5 s), and with none goes to the demo model in this browser.
	var pending *probe
	if p.Where == "browser" {
		spec.Browser, spec.Site = true, demoSite()
	} else {
		server := strings.TrimSpace(p.Server)
		if server == "" {
			pending = p.service
			server = strings.TrimSuffix(siteURL("./"), "/")
		}
		u, err := safeHTTP(server)
		if err != nil {
			p.Status, p.Err = "error", err.Error()
			return
		}
		spec.Server = u
	}
	site := demoSite()
	p.Status, p.Err, p.Note = "running", "", ""
	// A decision has a time limit (the decision server's client gives up
	// after 60 s, so the page waits longer for a server): with no answer
	// by then, the engine worker's goroutines go to the console, and it is
	// started afresh and asked once more — a guard against a worker or a
	// server that hangs (TestBrowserDemoWatchdog).
	timeout := time.Duration(p.Timeout) * time.Second
	ctx.Async(func() {
		note := "" // what the page did to get the decision
		if pending != nil {
			<-pending.done
			if !pending.has {
				spec.Server, spec.Browser, spec.Site = "", true, site
				note = "No decision service answered at this site's /health: decided by the demo model in this browser."
			}
		}
		limit := 45 * time.Second
		if !spec.Browser {
			limit = 90 * time.Second
		}
		if timeout > 0 {
			limit = timeout
		}
		decide := func() (*jobs.Output, error) {
			tctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			return runJob(tctx, spec, nil)
		}
		out, err := decide()
		if errors.Is(err, context.DeadlineExceeded) {
			resetEngine(fmt.Sprintf("no decision within %v", limit))
			note = fmt.Sprintf("The first try got no decision within %v: the engine worker was started afresh and asked again.", limit)
			out, err = decide()
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("no decision within %v, twice (the engine worker was started afresh in between)", limit)
			}
		}
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			d := out.Decided
			p.Status, p.Choice, p.Opts, p.Probs, p.MS, p.Note = "done", d.Choice, d.Options, d.Probs, d.MS, note
		})
	})
}
