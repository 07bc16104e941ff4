package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// ReconstructPage samples blocks of s·B·A and, given the base and tuned
// checkpoints, runs the rebuild check and the identity check.
type ReconstructPage struct {
	app.Compo
	Status   string // idle | loading | ready | running | error
	Err      string
	URL      string
	BaseURL  string
	TunedURL string
	Modules  []string
	Module   string
	Row0     int
	Col0     int
	Size     int
	Block    *rebuild.Block
	Rebuild  *rebuild.Result
	Prog     string
	Source   string // what the adapter is, for the report
	CkSource string // what the checkpoints are
	adapter  fs.FS
	base     fs.FS
	tuned    fs.FS
	// Local checkpoint files picked so far (both are needed).
	pickedBase, pickedTuned fs.FS
}

func (p *ReconstructPage) OnInit() {
	p.Status, p.Size = "idle", 32
}

func (p *ReconstructPage) Render() app.UI {
	return shell("reconstruct",
		app.H1().Text("Reconstruct"),
		app.P().Class("lead").Text("Computes a block of ΔW = s·B·A from the factors, reading only the bytes it needs, and — given the base and tuned checkpoints — the rebuild figures of every module (residual against the bf16 noise of the tuned weight, relative error) and the card's identity check of every tensor."),
		app.Div().Class("card controls").Body(
			app.Button().ID("recon-demo").Class("primary").Text("Load the demo world").OnClick(p.onDemo).Disabled(p.Status == "loading" || p.Status == "running"),
			app.Input().ID("recon-url").Type("url").Placeholder("adapter URL (…/resolve/main)").Value(p.URL).OnChange(p.ValueTo(&p.URL)),
			app.Button().ID("recon-open").Text("Open URL").OnClick(p.onURL),
			app.Label().Class("file").Body(app.Text("or local adapter files "),
				app.Input().ID("recon-adapter-files").Type("file").Multiple(true).OnChange(p.onAdapterFiles)),
		),
		app.If(len(p.Modules) > 0, func() app.UI {
			return app.Div().Class("card controls").Body(
				app.Select().ID("recon-module").OnChange(p.ValueTo(&p.Module)).Body(
					app.Range(p.Modules).Slice(func(i int) app.UI {
						return app.Option().Value(p.Modules[i]).Text(clip(p.Modules[i], 80)).Selected(p.Modules[i] == p.Module)
					}),
				),
				app.Label().Body(app.Text("rows from "), app.Input().ID("recon-row").Type("number").Min(0).Value(p.Row0).OnChange(p.ValueTo(&p.Row0))),
				app.Label().Body(app.Text("cols from "), app.Input().ID("recon-col").Type("number").Min(0).Value(p.Col0).OnChange(p.ValueTo(&p.Col0))),
				app.Label().Body(app.Text("size "), app.Input().ID("recon-size").Type("number").Min(4).Max(64).Value(p.Size).OnChange(p.ValueTo(&p.Size))),
				app.Button().ID("recon-sample").Text("Compute block").OnClick(p.onSample),
				app.Input().ID("recon-base").Type("url").Placeholder("base checkpoint URL").Value(p.BaseURL).OnChange(p.ValueTo(&p.BaseURL)),
				app.Input().ID("recon-tuned").Type("url").Placeholder("tuned checkpoint URL").Value(p.TunedURL).OnChange(p.ValueTo(&p.TunedURL)),
				app.Button().ID("recon-checkpoints").Text("Use these checkpoints").OnClick(p.onCheckpoints),
				app.Label().Class("file").Body(app.Text("or local base files (shards + index) "),
					app.Input().ID("recon-base-files").Type("file").Multiple(true).OnChange(p.onCheckpointFiles(&p.pickedBase))),
				app.Label().Class("file").Body(app.Text("local tuned files "),
					app.Input().ID("recon-tuned-files").Type("file").Multiple(true).OnChange(p.onCheckpointFiles(&p.pickedTuned))),
				app.If(p.base != nil, func() app.UI {
					return app.Button().ID("recon-rebuild").Text("Rebuild check (base + s·B·A vs tuned)").OnClick(p.onRebuild).Disabled(p.Status == "running")
				}),
			)
		}),
		app.If(p.Status == "error", func() app.UI { return app.Div().Class("card error").ID("error").Text(clip(p.Err, 600)) }),
		app.If(p.Status == "running" || p.Status == "loading", func() app.UI { return app.Div().Class("card").Text(p.Prog) }),
		app.If(p.Block != nil || p.Rebuild != nil, func() app.UI {
			return app.Div().Class("card actions").Body(
				app.Button().ID("recon-download-json").Text("Download JSON").OnClick(func(ctx app.Context, e app.Event) {
					download("clefcheck-reconstruct.json", "application/json", p.reportJSON())
				}),
				app.Button().ID("recon-download-md").Text("Download Markdown").OnClick(func(ctx app.Context, e app.Event) {
					download("clefcheck-reconstruct.md", "text/markdown", []byte(reconstructMarkdown(p.Source, p.CkSource, p.Block, p.Rebuild)))
				}),
			)
		}),
		app.If(p.Block != nil, func() app.UI { return p.renderBlock() }),
		app.If(p.Rebuild != nil, func() app.UI { return p.renderRebuild() }),
	)
}

// reconstructReport is the page's JSON report: the sampled block and the
// rebuild check, the latter in the schema of clefcheck rebuild --json.
type reconstructReport struct {
	Adapter     string          `json:"adapter"`
	Checkpoints string          `json:"checkpoints,omitempty"`
	Block       *rebuild.Block  `json:"block,omitempty"`
	Rebuild     *rebuild.Result `json:"rebuild,omitempty"`
}

func (p *ReconstructPage) reportJSON() []byte {
	b, err := json.MarshalIndent(reconstructReport{Adapter: p.Source, Checkpoints: p.CkSource, Block: p.Block, Rebuild: p.Rebuild}, "", "  ")
	if err != nil {
		return []byte(fmt.Sprintf(`{"error": %q}`, err.Error()))
	}
	return b
}

// reconstructMarkdown renders the block's statistics and the rebuild check.
func reconstructMarkdown(adapter, checkpoints string, b *rebuild.Block, r *rebuild.Result) string {
	var sb strings.Builder
	esc := func(x string) string { return strings.ReplaceAll(strings.ReplaceAll(x, "|", "\\|"), "\n", " ") }
	fmt.Fprintf(&sb, "# clefcheck reconstruct: %s\n\n", esc(adapter))
	if b != nil {
		fmt.Fprintf(&sb, "## Block of s·B·A\n\n%s (%d × %d, s = %g): rows %d–%d, columns %d–%d\n\n| min | max | mean | rms |\n|---|---|---|---|\n| %.6g | %.6g | %.6g | %.6g |\n\n",
			esc(b.Module), b.Out, b.In, b.Scaling, b.Row0, b.Row0+b.Rows-1, b.Col0, b.Col0+b.Cols-1, b.Min, b.Max, b.Mean, b.RMS)
	}
	if r != nil {
		fmt.Fprintf(&sb, "## Rebuild check: %s\n\nCheckpoints: %s. %d tensors compared, %d differ; %d modules rebuilt.\n\n", strings.ToUpper(r.Verdict), esc(checkpoints), r.Compared, len(r.Differing), len(r.Matrices))
		if len(r.Findings) > 0 {
			sb.WriteString("| severity | code | subject | message |\n|---|---|---|---|\n")
			for _, f := range r.Findings {
				fmt.Fprintf(&sb, "| %s | `%s` | %s | %s |\n", f.Severity, f.Code, esc(f.Subject), esc(f.Message))
			}
			sb.WriteString("\n")
		}
		sb.WriteString("| module | out × in | residual / noise | rebuilt rel. error |\n|---|---|---|---|\n")
		for _, m := range r.Matrices {
			fmt.Fprintf(&sb, "| %s | %d × %d | %.4f | %.4g%% |\n", esc(m.Module), m.Out, m.In, m.ResidualToNoise, 100*m.RebuiltRelError)
		}
	}
	return sb.String()
}

func (p *ReconstructPage) renderBlock() app.UI {
	b := p.Block
	return app.Div().Class("card").ID("recon-block").Body(
		app.H2().Text(fmt.Sprintf("%s: rows %d–%d, columns %d–%d of %d × %d (s = %g)", clip(b.Module, 80), b.Row0, b.Row0+b.Rows-1, b.Col0, b.Col0+b.Cols-1, b.Out, b.In, b.Scaling)),
		heatmap(b),
		app.Div().Class("muted").ID("recon-stats").Text(fmt.Sprintf("min %.4g · max %.4g · mean %.4g · rms %.4g", b.Min, b.Max, b.Mean, b.RMS)),
	)
}

// heatmap draws a block as SVG cells, blue for negative, red for positive,
// scaled to the largest magnitude.
func heatmap(b *rebuild.Block) app.UI {
	const cell = 10.0
	top := math.Max(math.Abs(b.Min), math.Abs(b.Max))
	if top == 0 {
		top = 1
	}
	cells := make([]app.UI, 0, len(b.Values))
	for i := 0; i < b.Rows; i++ {
		for j := 0; j < b.Cols; j++ {
			v := b.Values[i*b.Cols+j] / top
			r, g, bl := 255, 255, 255
			if v > 0 {
				g, bl = int(255*(1-v)), int(255*(1-v))
			} else {
				r, g = int(255*(1+v)), int(255*(1+v))
			}
			cells = append(cells, app.Elem("rect").XMLNS(svgNS).Attr("x", float64(j)*cell).Attr("y", float64(i)*cell).Attr("width", cell).Attr("height", cell).
				Attr("fill", fmt.Sprintf("rgb(%d,%d,%d)", r, g, bl)))
		}
	}
	return app.Elem("svg").XMLNS(svgNS).ID("heatmap").Attr("width", float64(b.Cols)*cell).Attr("height", float64(b.Rows)*cell).Body(cells...)
}

func (p *ReconstructPage) renderRebuild() app.UI {
	r := p.Rebuild
	worst, worstRel := 0.0, 0.0
	for _, m := range r.Matrices {
		worst, worstRel = math.Max(worst, m.ResidualToNoise), math.Max(worstRel, m.RebuiltRelError)
	}
	rows := r.Matrices[:min(len(r.Matrices), 40)]
	return app.Div().Class("card").ID("recon-rebuild-result").Body(
		app.Span().ID("rebuild-verdict").Class("badge "+r.Verdict).Text(strings.ToUpper(r.Verdict)),
		app.Span().Text(fmt.Sprintf(" %d tensors compared, %d differ; %d modules rebuilt; largest residual/noise %.4g, largest rebuilt relative error %.4g%%", r.Compared, len(r.Differing), len(r.Matrices), worst, 100*worstRel)),
		app.If(len(r.Matrices) > len(rows), func() app.UI {
			return app.Div().Class("muted").Text(fmt.Sprintf("the first %d of %d modules; 'clefcheck rebuild --json' lists all", len(rows), len(r.Matrices)))
		}),
		app.Table().Body(
			app.THead().Body(app.Tr().Body(app.Th().Text("module"), app.Th().Text("out × in"), app.Th().Text("residual / noise"), app.Th().Text("rebuilt rel. error"))),
			app.TBody().Body(app.Range(rows).Slice(func(i int) app.UI {
				m := rows[i]
				return app.Tr().Body(app.Td().Class("mono").Text(clip(m.Module, 70)), app.Td().Text(fmt.Sprintf("%d × %d", m.Out, m.In)),
					app.Td().Text(fmt.Sprintf("%.4f", m.ResidualToNoise)), app.Td().Text(fmt.Sprintf("%.4g%%", 100*m.RebuiltRelError)))
			})),
		),
	)
}

func (p *ReconstructPage) onDemo(ctx app.Context, e app.Event) {
	ad, err1 := source.NewHTTP(siteURL("demo/adapter/"))
	base, err2 := source.NewHTTP(siteURL("demo/base/"))
	tuned, err3 := source.NewHTTP(siteURL("demo/tuned/"))
	if err := firstErr(err1, err2, err3); err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	p.Source, p.CkSource = "the demo world's adapter", "the demo world's base and tuned checkpoints"
	p.open(ctx, ad, base, tuned)
}

// onAdapterFiles opens adapter files picked from the disk (read in place).
func (p *ReconstructPage) onAdapterFiles(ctx app.Context, e app.Event) {
	app.Window().Set("__clefcheckReconFiles", ctx.JSSrc().Get("files"))
	fsys, names, err := pickedFiles("__clefcheckReconFiles")
	if err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	p.Source = fmt.Sprintf("%d local files (%s)", len(names), clip(strings.Join(names, ", "), 100))
	p.open(ctx, fsys, nil, nil)
}

// onCheckpointFiles keeps local checkpoint files (one model.safetensors, or
// shards with model.safetensors.index.json) for base or tuned; once both
// are picked they are opened like checkpoint URLs.
func (p *ReconstructPage) onCheckpointFiles(dst *fs.FS) app.EventHandler {
	return func(ctx app.Context, e app.Event) {
		app.Window().Set("__clefcheckCkFiles", ctx.JSSrc().Get("files"))
		fsys, _, err := pickedFiles("__clefcheckCkFiles")
		if err != nil {
			p.Status, p.Err = "error", err.Error()
			return
		}
		*dst = fsys
		if p.pickedBase != nil && p.pickedTuned != nil {
			p.useCheckpoints(ctx, p.pickedBase, p.pickedTuned, "local base and tuned files")
		}
	}
}

func (p *ReconstructPage) onURL(ctx app.Context, e app.Event) {
	u, err := safeHTTP(p.URL)
	if err == nil {
		var h *source.HTTP
		if h, err = source.NewHTTP(u); err == nil {
			p.Source = u
			p.open(ctx, h, nil, nil)
			return
		}
	}
	p.Status, p.Err = "error", err.Error()
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// open reads the adapter's header and lists its modules; base and tuned
// are kept when their checkpoints can be opened (the demo served by
// clefcheck serve has them; a static site does not).
func (p *ReconstructPage) open(ctx app.Context, adapter, base, tuned fs.FS) {
	p.Status, p.Prog, p.Block, p.Rebuild = "loading", "reading the adapter's header…", nil, nil
	ctx.Async(func() {
		ck, err := safetensors.OpenCheckpoint(adapter, ".", "adapter_model")
		var mods []string
		if err == nil {
			mods = rebuild.Modules(ck)
			ck.Close()
		}
		haveCk := false
		if err == nil && base != nil {
			b, e1 := safetensors.OpenCheckpoint(base, ".", "model")
			t, e2 := safetensors.OpenCheckpoint(tuned, ".", "model")
			haveCk = e1 == nil && e2 == nil
			for _, c := range []*safetensors.Checkpoint{b, t} {
				if c != nil {
					c.Close()
				}
			}
		}
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.adapter, p.Modules, p.Status = adapter, mods, "ready"
			p.base, p.tuned = nil, nil
			if haveCk {
				p.base, p.tuned = base, tuned
			}
			if len(mods) > 0 {
				p.Module = mods[0]
			}
		})
	})
}

// onCheckpoints opens base and tuned checkpoints from URLs (single files or
// Hub-style shards with an index), read by range like the adapter.
func (p *ReconstructPage) onCheckpoints(ctx app.Context, e app.Event) {
	var hs [2]*source.HTTP
	for i, raw := range []string{p.BaseURL, p.TunedURL} {
		u, err := safeHTTP(raw)
		if err == nil {
			hs[i], err = source.NewHTTP(u)
		}
		if err != nil {
			p.Status, p.Err = "error", "checkpoint URLs: "+err.Error()
			return
		}
	}
	p.useCheckpoints(ctx, hs[0], hs[1], p.BaseURL+" and "+p.TunedURL)
}

// useCheckpoints checks that base and tuned open as checkpoints (headers
// only) and keeps them for the rebuild check.
func (p *ReconstructPage) useCheckpoints(ctx app.Context, base, tuned fs.FS, what string) {
	p.Status, p.Prog = "loading", "reading the checkpoints' headers…"
	ctx.Async(func() {
		var err error
		for _, h := range []fs.FS{base, tuned} {
			var ck *safetensors.Checkpoint
			if ck, err = safetensors.OpenCheckpoint(h, ".", "model"); err != nil {
				break
			}
			ck.Close()
		}
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", "checkpoints: "+err.Error()
				return
			}
			p.base, p.tuned, p.CkSource, p.Status = base, tuned, what, "ready"
		})
	})
}

func (p *ReconstructPage) onSample(ctx app.Context, e app.Event) {
	adapter, mod, r0, c0, n := p.adapter, p.Module, p.Row0, p.Col0, max(4, min(64, p.Size))
	ctx.Async(func() {
		ck, err := safetensors.OpenCheckpoint(adapter, ".", "adapter_model")
		var blk *rebuild.Block
		if err == nil {
			blk, err = rebuild.Sample(adapter, ck, mod, r0, n, c0, n)
			ck.Close()
		}
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Block, p.Status = blk, "ready"
		})
	})
}

func (p *ReconstructPage) onRebuild(ctx app.Context, e app.Event) {
	p.Status, p.Prog = "running", "rebuilding every module…"
	opt := rebuild.Options{Adapter: p.adapter, Base: p.base, Tuned: p.tuned, Workers: 1}
	ctx.Async(func() {
		res, err := rebuild.Run(context.Background(), opt)
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Rebuild, p.Status = res, "ready"
		})
	})
}
