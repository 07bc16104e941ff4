package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// AuditPage loads an adapter (demo, URL, files) and audits it.
type AuditPage struct {
	app.Compo
	Claims  string // profile name, "" = none
	Mode    string // quick | randomized | exact
	URL     string
	Status  string // idle | running | done | error
	Err     string
	Source  string
	Prog    progress.Status
	Res     *audit.Result
	Filter  string          // "" | fail | warn | info
	Custom  *claims.Profile // a profile loaded from a file
	Partial bool            // Res is the inventory of a running audit
	PageNo  int
	Engine  string // where the pairs were checked: "N workers" or "this page"
	cancel  context.CancelFunc
	started time.Time
}

const rowsPerPage = 25

func (p *AuditPage) OnInit() {
	if p.Claims == "" {
		p.Claims = "clef-lora-r256"
	}
	if p.Mode == "" {
		p.Mode = "randomized"
	}
	p.Status = "idle"
}

func (p *AuditPage) Render() app.UI {
	return shell("audit",
		app.H1().Text("Audit a LoRA adapter"),
		app.P().Class("lead").Text("Checks a PEFT LoRA adapter — rank, layout, counts, dtypes, NaN/Inf, the spectrum of every pair and its SVD form — against its config, its extraction report and a claims profile. Files are read in place; URLs with HTTP Range requests."),
		app.Div().Class("card controls").Body(
			app.Button().ID("load-demo").Class("primary").Text("Load the demo world").OnClick(p.onDemo).Disabled(p.Status == "running"),
			app.Span().Class("or").Text("or"),
			app.Input().ID("adapter-url").Type("url").Placeholder("https://huggingface.co/kvit-s/clef-lora-r256/resolve/main").Value(p.URL).OnChange(p.ValueTo(&p.URL)),
			app.Button().ID("open-url").Text("Open URL").OnClick(p.onURL).Disabled(p.Status == "running"),
			app.Span().Class("or").Text("or"),
			app.Label().Class("file").Body(
				app.Text("Choose files…"),
				app.Input().ID("adapter-files").Type("file").Multiple(true).OnChange(p.onFiles),
			),
			app.Label().Class("file").Body(
				app.Text("Choose a folder…"),
				app.Input().ID("adapter-folder").Type("file").Attr("webkitdirectory", "").OnChange(p.onFiles),
			),
		),
		app.Div().Class("card controls").Body(
			app.Label().Text("Claims "),
			app.Select().ID("claims").OnChange(p.ValueTo(&p.Claims)).Body(
				app.Range(p.claimNames()).Slice(func(i int) app.UI {
					n := p.claimNames()[i]
					label := n
					switch {
					case n == "":
						label = "(none)"
					case n == customClaims && p.Custom != nil:
						label = "file: " + clip(p.Custom.Name, 40)
					}
					return app.Option().Value(n).Text(label).Selected(n == p.Claims)
				}),
			),
			app.Label().Class("file").Body(
				app.Text("Load claims…"),
				app.Input().ID("claims-file").Type("file").Accept(".json,application/json").OnChange(p.onClaimsFile),
			),
			app.Label().Text(" Checks "),
			app.Select().ID("mode").OnChange(p.ValueTo(&p.Mode)).Body(
				app.Option().Value("quick").Text("quick: inventory, dtypes, NaN/Inf, norms").Selected(p.Mode == "quick"),
				app.Option().Value("randomized").Text("deep, randomized SVD-form check (fast)").Selected(p.Mode == "randomized"),
				app.Option().Value("exact").Text("deep, exact Gram matrices").Selected(p.Mode == "exact"),
			),
			app.If(p.Status == "running", func() app.UI {
				return app.Button().ID("cancel").Text("Cancel").OnClick(func(ctx app.Context, e app.Event) {
					if p.cancel != nil {
						p.cancel()
					}
				})
			}),
		),
		app.Div().ID("drop").Class("drop").Text("…or drop the adapter's files here").
			On("dragover", func(ctx app.Context, e app.Event) { e.PreventDefault() }).
			On("drop", p.onDrop),
		p.renderStatus(),
		app.If(p.Res != nil, func() app.UI { return p.renderResult() }),
	)
}

const customClaims = "(file)"

func (p *AuditPage) claimNames() []string {
	names := append(claims.Names(), "")
	if p.Custom != nil {
		names = append(names, customClaims)
	}
	return names
}

// onClaimsFile loads a claims profile from a local JSON file.
func (p *AuditPage) onClaimsFile(ctx app.Context, e app.Event) {
	app.Window().Set("__clefcheckClaims", ctx.JSSrc().Get("files"))
	fsys, names, err := pickedFiles("__clefcheckClaims")
	if err != nil || len(names) != 1 {
		p.fail(fmt.Errorf("choose one claims JSON file"))
		return
	}
	ctx.Async(func() {
		data, err := source.ReadSmall(fsys, names[0], 16<<20)
		var prof *claims.Profile
		if err == nil {
			prof, err = claims.Parse(data)
		}
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.fail(fmt.Errorf("claims file: %v", err))
				return
			}
			p.Custom, p.Claims = prof, customClaims
			if p.Status == "error" {
				p.Status, p.Err = "idle", ""
			}
		})
	})
}

func (p *AuditPage) renderStatus() app.UI {
	switch p.Status {
	case "running":
		s := p.Prog
		return app.Div().Class("card").ID("progress").Body(
			app.Div().Text(fmt.Sprintf("Auditing %s…", clip(p.Source, 120))),
			app.Progress().Max(1).Value(fmt.Sprintf("%.4f", s.Fraction())),
			app.Div().Class("muted").Text(s.String()),
			app.If(p.Engine != "", func() app.UI { return app.Div().Class("muted").ID("engine").Text("Checking in " + p.Engine) }),
		)
	case "error":
		return app.Div().Class("card error").ID("error").Text(clip(p.Err, 600))
	}
	return app.Text("")
}

func (p *AuditPage) renderResult() app.UI {
	r := p.Res
	s := r.Summary
	var shown []report.Finding
	for _, f := range r.Findings {
		if p.Filter == "" || string(f.Severity) == p.Filter {
			shown = append(shown, f)
		}
	}
	pages := max(1, (len(r.Matrices)+rowsPerPage-1)/rowsPerPage)
	pg := min(p.PageNo, pages-1)
	rows := r.Matrices[pg*rowsPerPage : min(len(r.Matrices), (pg+1)*rowsPerPage)]
	count := map[report.Severity]int{}
	for _, f := range r.Findings {
		count[f.Severity]++
	}
	filterBtn := func(sev, label string) app.UI {
		b := app.Button().Text(label).OnClick(func(ctx app.Context, e app.Event) { p.Filter = sev })
		if p.Filter == sev {
			b = b.Class("active")
		}
		return b
	}
	return app.Div().Body(
		app.Div().Class("card summary").Body(
			app.If(p.Partial, func() app.UI {
				return app.Span().ID("inventory").Class("badge warn").Text("INVENTORY — checks running")
			}).Else(func() app.UI {
				return app.Span().ID("verdict").Class("badge " + r.Verdict).Text(strings.ToUpper(r.Verdict))
			}),
			app.Span().Text(fmt.Sprintf(" %s — %d pairs (%d large, %d small), %d parameters, %s, r = %d, scaling %g, %s audit in %.2f s",
				clip(s.Adapter, 80), s.Pairs, s.Large, s.Small, s.Parameters, progress.Bytes(s.Bytes), s.Rank, s.Scaling, s.Mode, s.Seconds)),
			app.Div().Class("muted").Text(fmt.Sprintf("expected pairs from %s; report: %s; claims: %s", s.Expectations, orNone(s.Report), orNone(s.Claims))),
			app.If(s.Kernel != "", func() app.UI { return app.Div().Class("muted").ID("kernel").Text("computed: " + s.Kernel) }),
			app.Div().Class("actions").Body(
				app.Button().ID("download-json").Text("Download JSON").OnClick(func(ctx app.Context, e app.Event) {
					data, _ := json.MarshalIndent(p.Res, "", "  ")
					download("clefcheck-audit.json", "application/json", data)
				}),
				app.Button().ID("download-md").Text("Download Markdown").OnClick(func(ctx app.Context, e app.Event) {
					download("clefcheck-audit.md", "text/markdown", []byte(auditMarkdown(p.Res)))
				}),
			),
		),
		app.Div().Class("card").Body(
			app.H2().Text(fmt.Sprintf("Findings (%d fail, %d warn, %d info)", count[report.Fail], count[report.Warn], count[report.Info])),
			app.Div().Class("filters").Body(filterBtn("", "all"), filterBtn("fail", "fail"), filterBtn("warn", "warn"), filterBtn("info", "info")),
			app.Ul().ID("findings").Class("findings").Body(
				app.Range(shown).Slice(func(i int) app.UI {
					f := shown[i]
					return app.Li().Class(string(f.Severity)).Body(
						app.Span().Class("sev").Text(string(f.Severity)),
						app.Code().Text(f.Code),
						app.Span().Class("subject").Text(clip(f.Subject, 100)),
						app.Span().Text(clip(f.Message, 400)),
					)
				}),
			),
		),
		app.Div().Class("card").Body(
			app.H2().Text("Pairs"),
			app.Table().ID("matrices").Body(
				app.THead().Body(app.Tr().Body(
					app.Th().Text("module"), app.Th().Text("out × in"), app.Th().Text("r"), app.Th().Text("rank"),
					app.Th().Text("σ₁"), app.Th().Text("spectrum"), app.Th().Text("form dev."), app.Th().Text("report σ / tol"), app.Th().Text("method"),
				)),
				app.TBody().Body(app.Range(rows).Slice(func(i int) app.UI {
					m := rows[i]
					return app.Tr().Body(
						app.Td().Class("mono").Text(clip(m.Module, 70)),
						app.Td().Text(fmt.Sprintf("%d × %d", m.Out, m.In)),
						app.Td().Text(fmt.Sprint(m.Rank)),
						app.Td().Text(numOr(float64(m.NumRank), m.Sigma != nil, "%.0f")),
						app.Td().Text(firstOr(m.Sigma)),
						app.Td().Body(spectrum(m.Sigma)),
						app.Td().Text(ptrOr(m.FormDev, "%.2g")),
						app.Td().Text(ptrOr(m.ReportSV, "%.2f")),
						app.Td().Class("muted").Text(methodOf(m)),
					)
				})),
			),
			app.Div().Class("pager").Body(
				app.Button().Text("‹").Disabled(pg == 0).OnClick(func(ctx app.Context, e app.Event) { p.PageNo = pg - 1 }),
				app.Span().ID("page").Text(fmt.Sprintf(" page %d of %d ", pg+1, pages)),
				app.Button().Text("›").Disabled(pg >= pages-1).OnClick(func(ctx app.Context, e app.Event) { p.PageNo = pg + 1 }),
			),
		),
	)
}

func methodOf(m *audit.Matrix) string {
	switch {
	case m.Method == "probes" && m.SigmaBound != nil:
		return fmt.Sprintf("probes ±%.2g%%", 100**m.SigmaBound)
	case m.Method != "":
		return m.Method
	}
	return "–"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func numOr(x float64, ok bool, f string) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf(f, x)
}

func firstOr(x []float64) string {
	if len(x) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.4g", x[0])
}

func ptrOr(x *float64, f string) string {
	if x == nil {
		return "–"
	}
	return fmt.Sprintf(f, *x)
}

const svgNS = "http://www.w3.org/2000/svg"

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
	return app.Elem("svg").XMLNS(svgNS).Attr("width", w).Attr("height", h).Attr("viewBox", fmt.Sprintf("0 0 %g %g", w, h)).Class("spark").Body(
		app.Elem("polyline").XMLNS(svgNS).Attr("points", strings.Join(pts, " ")).Attr("fill", "none").Attr("stroke", "currentColor").Attr("stroke-width", "1.2"),
	)
}

func (p *AuditPage) onDemo(ctx app.Context, e app.Event) {
	p.Claims = "demo"
	h, err := source.NewHTTP(siteURL("demo/adapter/"))
	if err != nil {
		p.fail(err)
		return
	}
	p.run(ctx, h, "the demo world's adapter")
}

func (p *AuditPage) onURL(ctx app.Context, e app.Event) {
	u, err := safeHTTP(p.URL)
	if err != nil {
		p.fail(err)
		return
	}
	h, err := source.NewHTTP(u)
	if err != nil {
		p.fail(err)
		return
	}
	p.run(ctx, h, u)
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
	fsys, names, err := pickedFiles(global)
	if err != nil {
		p.fail(err)
		return
	}
	p.run(ctx, fsys, fmt.Sprintf("%d local files (%s)", len(names), clip(strings.Join(names, ", "), 100)))
}

func (p *AuditPage) fail(err error) {
	p.Status, p.Err, p.Res = "error", err.Error(), nil
}

// run audits fsys in the background, publishing progress and the result.
func (p *AuditPage) run(ctx app.Context, fsys fs.FS, what string) {
	if p.Status == "running" {
		return
	}
	var prof *claims.Profile
	switch {
	case p.Claims == customClaims:
		prof = p.Custom
	case p.Claims != "":
		var err error
		if prof, err = claims.Builtin(p.Claims); err != nil {
			p.fail(err)
			return
		}
	}
	rctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.Status, p.Err, p.Res, p.Source, p.PageNo, p.Prog, p.Engine = cancel, "running", "", nil, what, 0, progress.Status{}, ""
	quick, randomized := p.Mode == "quick", p.Mode == "randomized"
	ctx.Async(func() {
		yield := newYield()
		opt := audit.Options{Claims: prof, Quick: quick, Randomized: randomized, Workers: 1,
			Progress: func(s progress.Status) {
				ctx.Dispatch(func(ctx app.Context) { p.Prog = s })
			},
			OnInventory: func(r *audit.Result) {
				r.Summary.Adapter = what
				ctx.Dispatch(func(ctx app.Context) { p.Res, p.Partial = r, true })
			},
			Yield: func() error {
				if yield != nil {
					yield()
				}
				return rctx.Err()
			},
		}
		// The pairs go to Web Workers (engine.wasm), two per core, when the
		// browser has them; the page only keeps the score.
		started, kernel := 0, ""
		opt.Remote = auditRemote(fsys, opt, func(n int, k string) {
			started, kernel = n, k
			ctx.Dispatch(func(ctx app.Context) { p.Engine = fmt.Sprintf("%d Web Workers", n) })
		})
		res, err := audit.Run(rctx, fsys, ".", opt)
		if err != nil && opt.Remote != nil && started == 0 && rctx.Err() == nil {
			// No worker could start (an old host without engine.wasm, a
			// browser that refuses workers): check the pairs in the page.
			ctx.Dispatch(func(ctx app.Context) { p.Engine = "this page (workers unavailable: " + clip(err.Error(), 200) + ")" })
			opt.Remote = nil
			res, err = audit.Run(rctx, fsys, ".", opt)
		}
		ctx.Dispatch(func(ctx app.Context) {
			p.cancel = nil
			if err != nil {
				p.fail(fmt.Errorf("audit stopped: %v", err))
				return
			}
			res.Summary.Adapter = what
			if started > 0 {
				res.Summary.Kernel = strings.TrimPrefix(kernel+"; ", "; ") + "in " + p.Engine
			} else if p.Engine != "" {
				res.Summary.Kernel = strings.TrimPrefix(res.Summary.Kernel+"; ", "; ") + "in " + p.Engine
			}
			p.Res, p.Status, p.Partial = res, "done", false
		})
	})
}

// auditMarkdown renders a result as Markdown.
func auditMarkdown(r *audit.Result) string {
	var b strings.Builder
	s := r.Summary
	fmt.Fprintf(&b, "# clefcheck audit: %s\n\n**Verdict: %s** (%s audit, %.2f s)\n\n", s.Adapter, strings.ToUpper(r.Verdict), s.Mode, s.Seconds)
	fmt.Fprintf(&b, "- %d pairs (%d large, %d small), %d parameters, %d bytes\n- r = %d, lora_alpha = %g, scaling %g\n- expected pairs from %s; report %s; claims %s\n\n",
		s.Pairs, s.Large, s.Small, s.Parameters, s.Bytes, s.Rank, s.Alpha, s.Scaling, s.Expectations, orNone(s.Report), orNone(s.Claims))
	fmt.Fprintf(&b, "## Findings\n\n| severity | code | subject | message |\n|---|---|---|---|\n")
	esc := func(x string) string { return strings.ReplaceAll(strings.ReplaceAll(x, "|", "\\|"), "\n", " ") }
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", f.Severity, f.Code, esc(f.Subject), esc(f.Message))
	}
	fmt.Fprintf(&b, "\n## Pairs\n\n| module | out × in | r | rank | σ₁ | form dev. | report σ / tol |\n|---|---|---|---|---|---|---|\n")
	for _, m := range r.Matrices {
		fmt.Fprintf(&b, "| %s | %d × %d | %d | %s | %s | %s | %s |\n", m.Module, m.Out, m.In, m.Rank, numOr(float64(m.NumRank), m.Sigma != nil, "%.0f"), firstOr(m.Sigma), ptrOr(m.FormDev, "%.2g"), ptrOr(m.ReportSV, "%.2f"))
	}
	return b.String()
}
