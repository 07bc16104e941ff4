package web

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// AuditPage loads an adapter (demo, URL, files) and audits it.
type AuditPage struct {
	app.Compo
	Claims string // profile name, "" = none
	Mode   report.Mode
	URL    string
	Status string // idle | running | done | error
	Err    string
	Source string
	Prog   progress.Status
	Res    *report.Audit
	MD     string // the result as Markdown (from the engine)
	Filter string // "" | fail | warn | info
	// Builtin are the engine's claims profiles.
	Builtin []string
	// CustomName and CustomJSON are a profile loaded from a file (checked
	// by the engine), sent to the engine as it is.
	CustomName string
	CustomJSON []byte
	Partial    bool   // Res is the inventory of a running audit
	PageNo     int    // unused: the tables page themselves
	Engine     string // where the pairs are checked: "N Web Workers", or the engine worker itself
	// The source's Hub endpoint and token (the token in memory; in
	// localStorage only when Remember is ticked; never in a link).
	Endpoint string
	Token    string
	Remember bool
	Resolved string   // what the source resolved to
	Link     string   // the page's link, once asked for
	Attest   []byte   // the result's in-toto statement (from the engine)
	NoAttest string   // why there is none
	Badge    string   // the verdict as an SVG badge (from the engine)
	Prov     string   // the provenance as text (from the engine)
	Doc      string   // "codes": the page is the codes page (codes.go)
	Lines    []string // the summary's lines (from the engine)
	cancel   context.CancelFunc
	gen      int // the audit under way: an earlier one's answers are dropped

	// The charts (drawn by the engine): the result's, the pair opened (a
	// click in the heatmap or the table) and its spectrum, the heatmap's
	// metric (a figure's Key).
	Charts  []jobs.Figure
	Pair    string
	PairFig *jobs.Figure
	Metric  string
}

const rowsPerPage = 25

func (p *AuditPage) OnInit() {
	if p.Claims == "" {
		p.Claims = "clef-lora-r256"
	}
	if p.Mode == "" {
		p.Mode = report.ModeRandomized
	}
	p.Status = "idle"
	if t := storedToken(); t != "" {
		p.Token, p.Remember, hubToken = t, true, t
	}
}

// OnNav fills the page from its link: src (or repo, rev, path), endpoint,
// claims, mode; run=1 starts the audit.
func (p *AuditPage) OnNav(ctx app.Context) {
	bindPage(ctx)
	q := query(ctx)
	if src := sourceOf(q); src != "" {
		p.URL = src
	}
	if e := q.Get("endpoint"); e != "" {
		p.Endpoint = clip(e, 500)
	}
	if c := q.Get("claims"); c != "" {
		p.Claims = clip(c, 100)
	}
	if m := report.Mode(q.Get("mode")); m == report.ModeQuick || m == report.ModeRandomized || m == report.ModeExact {
		p.Mode = m
	}
	if q.Get("run") == "1" && p.URL != "" {
		if p.URL == "demo" {
			p.onDemo(ctx, app.Event{})
		} else {
			p.onURL(ctx, app.Event{})
		}
	}
}

func (p *AuditPage) link() string {
	claims := p.Claims
	if claims == customClaims {
		claims = ""
	}
	return linkTo("", "src", p.URL, "endpoint", p.Endpoint, "claims", claims, "mode", string(p.Mode))
}

func (p *AuditPage) Render() app.UI {
	if p.Doc != "" {
		return p.renderCodes()
	}
	return shell("audit",
		app.H1().Text("Audit a LoRA adapter"),
		app.P().Class("lead").Text("Checks a PEFT LoRA adapter — rank, layout, counts, dtypes, NaN/Inf, the spectrum of every pair and its SVD form — against its config, its extraction report and a claims profile. Files are read in place; URLs with HTTP Range requests."),
		box("card controls",
			button("load-demo", "primary", "Load the demo world", p.Status == "running", p.onDemo),
			span("or", "or"),
			labelled("adapter-url", "Adapter", field("adapter-url", "text", "owner/name[@rev], hf://…, a Hub page or a folder URL", p.URL, valueTo(&p.URL))),
			button("open-url", "", "Open", p.Status == "running", p.onURL),
			span("or", "or"),
			picker("adapter-files", "Choose files…", false, p.onFiles),
			picker("adapter-folder", "Choose a folder…", true, p.onFiles),
		),
		box("card controls",
			labelled("endpoint", "Hub endpoint", field("endpoint", "url", "https://huggingface.co (default)", p.Endpoint, valueTo(&p.Endpoint))),
			labelled("hub-token", "Hub token", field("hub-token", "password", "hf_… (gated or private repositories)", p.Token, p.onToken)),
			app.Label().For("remember-token").Body(app.Input().ID("remember-token").Type("checkbox").Checked(p.Remember).OnChange(p.onRemember), app.Text(" remember it in this browser")),
			shareLink(p.Link, func(l string) { p.Link = l }, p.link),
		),
		app.If(p.Resolved != "", func() app.UI { return app.Div().Class("muted").ID("resolved").Text(p.Resolved) }),
		box("card controls",
			app.Label().For("claims").Text("Claims "),
			choice("claims", p.Claims, setTo(&p.Claims), p.claimChoices()...),
			app.Label().Class("file").Body(
				app.Text("Load claims…"),
				app.Input().ID("claims-file").Type("file").Accept(".json,application/json").OnChange(p.onClaimsFile),
			),
			app.Label().For("mode").Text(" Checks "),
			choice("mode", string(p.Mode), setTo(&p.Mode), "quick", "quick: inventory, dtypes, NaN/Inf, norms",
				"randomized", "deep, randomized SVD-form check (fast)", "exact", "deep, exact Gram matrices"),
			app.If(p.Status == "running", func() app.UI {
				return button("cancel", "", "Cancel", false, func(ctx app.Context, e app.Event) {
					if p.cancel != nil {
						p.cancel()
					}
				})
			}),
		),
		app.Div().ID("drop").Class("drop").Text("…or drop the adapter's files here").
			On("dragover", func(ctx app.Context, e app.Event) { e.PreventDefault() }).
			On("drop", p.onDrop),
		&CacheBar{Status: p.Status},
		p.renderStatus(),
		app.If(p.Res != nil, func() app.UI { return p.renderResult() }),
	)
}

const customClaims = "(file)"

// OnMount asks the engine for its built-in claims profiles.
func (p *AuditPage) OnMount(ctx app.Context) {
	bindPage(ctx)
	if p.Doc != "" {
		p.mountCodes(ctx)
		return
	}
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindClaims}, nil)
		if err == nil {
			dispatch(ctx, func(ctx app.Context) { p.Builtin = out.ClaimNames })
		}
	})
}

// claimChoices are the claims select's values and labels: the built-in
// profiles (the current one until the engine has listed them), none, and
// a profile loaded from a file.
func (p *AuditPage) claimChoices() []string {
	var kv []string
	names := p.Builtin
	if len(names) == 0 && p.Claims != "" && p.Claims != customClaims {
		names = []string{p.Claims}
	}
	for _, n := range names {
		kv = append(kv, n, n)
	}
	kv = append(kv, "", "(none)")
	if p.CustomName != "" {
		kv = append(kv, customClaims, "file: "+clip(p.CustomName, 40))
	}
	return kv
}

// onClaimsFile loads a claims profile from a local JSON file: the engine
// checks it as the audit will read it.
func (p *AuditPage) onClaimsFile(ctx app.Context, e app.Event) {
	app.Window().Set("__clefcheckClaims", ctx.JSSrc().Get("files"))
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindClaims, ClaimsFile: &jobs.Input{Files: "__clefcheckClaims"}}, nil)
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.fail(fmt.Errorf("claims file: %w", err))
				return
			}
			p.CustomName, p.CustomJSON, p.Claims = out.ClaimsName, out.ClaimsJSON, customClaims
			if p.Status == "error" {
				p.Status, p.Err = "idle", ""
			}
		})
	})
}

func (p *AuditPage) renderResult() app.UI {
	r := p.Res
	s := r.Summary
	count := map[report.Severity]int{}
	for _, f := range r.Findings {
		count[f.Severity]++
	}
	// An audit that could not be completed shows no figure it did not
	// measure: nothing was read when no file and no tensor was.
	failed := r.Verdict == report.VerdictError && !p.Partial
	v, figures, from, why := badge("verdict", r.Verdict), " "+clip(s.Adapter, 80)+": nothing could be read", "", app.UI(app.Text(""))
	if p.Partial {
		v = app.Span().ID("inventory").Class("badge running").Text("RUNNING — inventory read")
	}
	read := len(s.Files) > 0 || s.Tensors > 0
	if read {
		if len(p.Lines) == 2 {
			figures, from = " "+p.Lines[0], p.Lines[1]
		}
	}
	if failed {
		why = couldNot(r.Findings)
	}
	return app.Div().Body(
		box("card summary",
			v, app.Span().Text(figures), app.Div().Class("muted").Text(from),
			app.If(s.Kernel != "" && !p.Partial && read, func() app.UI { return app.Div().Class("muted").ID("kernel").Text("computed: " + s.Kernel) }),
			app.If(!p.Partial, func() app.UI {
				return app.Div().Body(downloads("download-json", "download-md", "clefcheck-audit", jsonOf(p.Res), p.MD),
					box("actions",
						button("download-attest", "", "Download attestation (in-toto)", p.Attest == nil, func(ctx app.Context, e app.Event) {
							download("clefcheck-audit.intoto.json", "application/json", p.Attest)
						}),
						button("download-badge", "", "Download badge (SVG)", p.Badge == "", func(ctx app.Context, e app.Event) {
							download("clefcheck-badge.svg", "image/svg+xml", []byte(p.Badge))
						}),
					))
			}),
		),
		why,
		app.If(!p.Partial && (!failed || len(r.Findings) > count[report.Unchecked]), func() app.UI { return p.renderFindings(count) }),
		app.If(len(p.Charts) > 0 && !p.Partial, func() app.UI { return p.renderGlance() }),
		app.If(p.Pair != "", func() app.UI { return p.renderPair(r) }),
		app.If(!p.Partial && len(r.Matrices) > 0, func() app.UI { return app.Div().OnClick(p.onPair).Body(p.renderPairs()) }),
		app.If(r.Provenance != nil && !p.Partial, func() app.UI { return renderProvenance() }),
	)
}

// spectrum draws σᵢ/σ₁ as a small SVG polyline (log scale, 10⁻³ to 1).
func spectrum(s []float64) app.UI {
	if len(s) == 0 || s[0] <= 0 {
		return app.Text("–")
	}
	const w, h = 120.0, 28.0
	var pts []string
	for i, v := range s {
		r := v / s[0]
		y := 0.0
		if r > 1e-3 {
			y = (3 + math.Log10(r)) / 3
		}
		x := w * float64(i) / float64(max(1, len(s)-1))
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, h-h*y))
	}
	return svg("svg", "width", w, "height", h, "viewBox", fmt.Sprintf("0 0 %g %g", w, h), "class", "spark").Body(
		svg("title").Text(fmt.Sprintf("σᵢ/σ₁ for i = 1…%d, log scale 10⁻³ to 1 (σ₁ = %.4g): click the row for the chart with axes", len(s), s[0])),
		svg("polyline", "points", strings.Join(pts, " "), "fill", "none", "stroke", "currentColor", "stroke-width", "1.2"),
	)
}

// onDemo audits the demo world's adapter, against the demo world's claims
// unless a claims file was loaded.
func (p *AuditPage) onDemo(ctx app.Context, e app.Event) {
	if p.Claims != customClaims {
		p.Claims = "demo"
	}
	p.URL = "demo"
	p.run(ctx, &jobs.Input{URL: siteURL("demo/adapter/")}, "the demo world's adapter")
}

// onURL audits the source typed: the engine parses it (a repository id,
// hf://, a Hub page, a folder URL) and says what it resolved to first.
func (p *AuditPage) onURL(ctx app.Context, e app.Event) {
	src := strings.TrimSpace(p.URL)
	switch {
	case src == "":
		p.fail(fmt.Errorf("give a source: owner/name[@revision], hf://owner/name, a Hub page or a folder URL"))
		return
	case src == "demo":
		p.onDemo(ctx, e)
		return
	}
	p.run(ctx, hubInput(src, p.Endpoint), src)
}

func (p *AuditPage) onToken(ctx app.Context, e app.Event) {
	p.Token = ctx.JSSrc().Get("value").String()
	keepToken(p.Token, p.Remember)
}

func (p *AuditPage) onRemember(ctx app.Context, e app.Event) {
	p.Remember = ctx.JSSrc().Get("checked").Bool()
	keepToken(p.Token, p.Remember)
}

func (p *AuditPage) onFiles(ctx app.Context, e app.Event) {
	app.Window().Set("__clefcheckFiles", ctx.JSSrc().Get("files"))
	p.fromPicked(ctx, "__clefcheckFiles")
}

func (p *AuditPage) onDrop(ctx app.Context, e app.Event) {
	e.PreventDefault()
	app.Window().Set("__clefcheckFiles", e.Get("dataTransfer").Get("files"))
	p.fromPicked(ctx, "__clefcheckFiles")
}

func (p *AuditPage) fromPicked(ctx app.Context, global string) {
	names, err := pickedNames(global)
	if err != nil {
		p.stop()
		p.fail(err)
		return
	}
	// The field no longer names what is audited (nor does the link). Its
	// value is cleared in place too: an attribute set to "" leaves what
	// was typed.
	p.URL = ""
	clearField("adapter-url")
	p.run(ctx, &jobs.Input{Files: global}, fmt.Sprintf("%d local files (%s)", len(names), clip(strings.Join(names, ", "), 100)))
}

func (p *AuditPage) fail(err error) {
	p.Status, p.Err, p.Res = "error", err.Error(), nil
}

// stop cancels the audit running, if one is, and drops its late answers:
// a pick that could not be read replaces it as a new pick would.
func (p *AuditPage) stop() {
	if p.cancel != nil {
		p.cancel()
		p.cancel = nil
	}
	p.gen++
}

// run audits the adapter in the engine worker, publishing its progress,
// its inventory and then its result.
//
// A new source opened (or picked) while an audit runs cancels that audit
// and audits the new one: what the user asked for last is what the page
// shows; the cancelled audit's late answers are dropped.
func (p *AuditPage) run(ctx app.Context, in *jobs.Input, what string) {
	p.stop()
	gen := p.gen
	current := func() bool { return p.gen == gen }
	spec := &jobs.Spec{Kind: jobs.KindAudit, Adapter: in, Mode: p.Mode, Label: what, NoDigest: noDigest}
	switch {
	case p.Claims == customClaims && p.CustomJSON != nil:
		spec.ClaimsJSON = p.CustomJSON
	case p.Claims != "" && p.Claims != customClaims:
		spec.Claims = p.Claims
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.Status, p.Err, p.Res, p.Source, p.PageNo, p.Prog, p.Engine, p.Pair, p.PairFig, p.Charts = cancel, "running", "", nil, what, 0, progress.Status{}, "", "", nil, nil
	p.Resolved, p.Attest, p.NoAttest, p.Badge, p.Prov = "", nil, "", "", ""
	showLink(p.link())
	ctx.Async(func() {
		if in.URL != "" {
			// What the source resolves to, before its bytes are read.
			src, err := runJob(rctx, &jobs.Spec{Kind: jobs.KindSource, Adapter: in}, nil)
			dispatch(ctx, func(ctx app.Context) {
				if !current() {
					return
				}
				if err != nil {
					p.Resolved = "could not resolve: " + clip(err.Error(), 300)
				} else {
					p.Resolved = src.Note
				}
			})
		}
		out, err := runJob(rctx, spec, func(e jobs.Event) {
			dispatch(ctx, func(ctx app.Context) {
				switch {
				case !current():
				case e.Status != nil:
					p.Prog = *e.Status
				case e.Inventory != nil:
					p.Res, p.Partial, p.Lines = e.Inventory, true, e.Lines
				case e.Engine != "":
					p.Engine = e.Engine
				}
			})
		})
		dispatch(ctx, func(ctx app.Context) {
			if !current() {
				return
			}
			p.cancel = nil
			if err != nil {
				p.fail(fmt.Errorf("audit stopped: %w", err))
				return
			}
			p.Res, p.MD, p.Status, p.Partial, p.Charts, p.Lines = out.Audit, out.Markdown, "done", false, out.Charts, out.Lines
			p.Attest, p.NoAttest, p.Badge, p.Prov = out.Attestation, out.NoAttestation, out.Badge, out.Provenance
		})
	})
}
