package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
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
	Block    *report.Block
	Rebuild  *report.Rebuild
	// The block and the rebuild as Markdown (from the engine).
	BlockMD, RebuildMD string
	RebuildPage        int // the page of the rebuild's modules shown
	Prog               string
	Source             string // what the adapter is, for the report
	CkSource           string // what the checkpoints are
	adapter            *jobs.Input
	base               *jobs.Input
	tuned              *jobs.Input
	// Whether local base and tuned files were picked (both are needed).
	pickedBase, pickedTuned bool
}

func (p *ReconstructPage) OnInit() {
	p.Status, p.Size = "idle", 32
}

func (p *ReconstructPage) Render() app.UI {
	return shell("reconstruct",
		app.H1().Text("Reconstruct"),
		app.P().Class("lead").Text("Computes a block of ΔW = s·B·A from the factors, reading only the bytes it needs, and — given the base and tuned checkpoints — the rebuild figures of every module (residual against the bf16 noise of the tuned weight, relative error) and the card's identity check of every tensor."),
		box("card controls",
			button("recon-demo", "primary", "Load the demo world", p.Status == "loading" || p.Status == "running", p.onDemo),
			labelled("recon-url", "Adapter URL", field("recon-url", "url", "https://…/resolve/main (a folder)", p.URL, valueTo(&p.URL))),
			button("recon-open", "", "Open URL", false, p.onURL),
			picker("recon-adapter-files", "or local adapter files ", false, p.onAdapterFiles),
		),
		app.If(len(p.Modules) > 0, func() app.UI {
			return box("card controls",
				labelled("recon-module", "Module", choice("recon-module", p.Module, valueTo(&p.Module), p.moduleChoices()...)),
				app.Label().Body(app.Text("rows from "), field("recon-row", "number", "", p.Row0, valueTo(&p.Row0)).Min(0)),
				app.Label().Body(app.Text("cols from "), field("recon-col", "number", "", p.Col0, valueTo(&p.Col0)).Min(0)),
				app.Label().Body(app.Text("size "), field("recon-size", "number", "", p.Size, valueTo(&p.Size)).Min(4).Max(jobs.MaxBlock)),
				button("recon-sample", "", "Compute block", false, p.onSample),
				labelled("recon-base", "Base checkpoint", field("recon-base", "url", "https://… (model.safetensors or shards + index)", p.BaseURL, valueTo(&p.BaseURL))),
				labelled("recon-tuned", "Tuned checkpoint", field("recon-tuned", "url", "https://… (model.safetensors or shards + index)", p.TunedURL, valueTo(&p.TunedURL))),
				button("recon-checkpoints", "", "Use these checkpoints", false, p.onCheckpoints),
				picker("recon-base-files", "or local base files (shards + index) ", false, p.onCheckpointFiles("__clefcheckBase", &p.pickedBase)),
				picker("recon-tuned-files", "local tuned files ", false, p.onCheckpointFiles("__clefcheckTuned", &p.pickedTuned)),
				app.If(p.base != nil, func() app.UI {
					return button("recon-rebuild", "", "Rebuild check (base + s·B·A vs tuned)", p.Status == "running", p.onRebuild)
				}),
			)
		}),
		app.If(p.Status == "error", func() app.UI { return errorCard(p.Err) }),
		app.If(p.Status == "running" || p.Status == "loading", func() app.UI { return app.Div().Class("card").Text(p.Prog) }),
		app.If(p.Block != nil || p.Rebuild != nil, func() app.UI {
			return box("card", downloads("recon-download-json", "recon-download-md", "clefcheck-reconstruct", p.reportJSON, p.markdown()))
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
	Block       *report.Block   `json:"block,omitempty"`
	Rebuild     *report.Rebuild `json:"rebuild,omitempty"`
}

// markdown is the page's Markdown report: the block and the rebuild check.
func (p *ReconstructPage) markdown() string {
	md := "# clefcheck reconstruct: " + report.MDCell(p.Source) + "\n\n"
	if p.Block != nil {
		md += p.BlockMD
	}
	if p.Rebuild != nil {
		md += p.RebuildMD
	}
	return md
}

// moduleChoices are the module select's values and labels.
func (p *ReconstructPage) moduleChoices() []string {
	kv := make([]string, 0, 2*len(p.Modules))
	for _, m := range p.Modules {
		kv = append(kv, m, clip(m, 80))
	}
	return kv
}

func (p *ReconstructPage) reportJSON() []byte {
	b, err := json.MarshalIndent(reconstructReport{Adapter: p.Source, Checkpoints: p.CkSource, Block: p.Block, Rebuild: p.Rebuild}, "", "  ")
	if err != nil {
		return []byte(fmt.Sprintf(`{"error": %q}`, err.Error()))
	}
	return b
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
func heatmap(b *report.Block) app.UI {
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
			cells = append(cells, svg("rect", "x", float64(j)*cell, "y", float64(i)*cell, "width", cell, "height", cell, "fill", fmt.Sprintf("rgb(%d,%d,%d)", r, g, bl)))
		}
	}
	return svg("svg", "width", float64(b.Cols)*cell, "height", float64(b.Rows)*cell).ID("heatmap").Body(cells...)
}

func (p *ReconstructPage) renderRebuild() app.UI {
	r := p.Rebuild
	worst, worstRel := 0.0, 0.0
	for _, m := range r.Matrices {
		worst, worstRel = math.Max(worst, m.ResidualToNoise), math.Max(worstRel, m.RebuiltRelError)
	}
	figures, why := " nothing compared", app.UI(app.Text(""))
	if r.Compared > 0 || len(r.Matrices) > 0 {
		figures = fmt.Sprintf(" %d tensors compared, %d differ; %d modules rebuilt; largest residual/noise %.4g, largest rebuilt relative error %.4g%%", r.Compared, len(r.Differing), len(r.Matrices), worst, 100*worstRel)
	}
	if r.Verdict == report.VerdictError {
		why = couldNot(r.Findings)
	}
	return app.Div().Class("card").ID("recon-rebuild-result").Body(
		badge("rebuild-verdict", r.Verdict),
		app.Span().Text(figures), why,
		grid("rebuild-modules", nil),
	)
}

func (p *ReconstructPage) onDemo(ctx app.Context, e app.Event) {
	p.Source, p.CkSource = "the demo world's adapter", "the demo world's base and tuned checkpoints"
	p.open(ctx, &jobs.Input{URL: siteURL("demo/adapter/")}, &jobs.Input{URL: siteURL("demo/base/")}, &jobs.Input{URL: siteURL("demo/tuned/")})
}

// onAdapterFiles opens adapter files picked from the disk (read in place).
func (p *ReconstructPage) onAdapterFiles(ctx app.Context, e app.Event) {
	app.Window().Set("__clefcheckReconFiles", ctx.JSSrc().Get("files"))
	names, err := pickedNames("__clefcheckReconFiles")
	if err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	p.Source = fmt.Sprintf("%d local files (%s)", len(names), clip(strings.Join(names, ", "), 100))
	p.open(ctx, &jobs.Input{Files: "__clefcheckReconFiles"}, nil, nil)
}

// onCheckpointFiles keeps local checkpoint files (one model.safetensors, or
// shards with model.safetensors.index.json) for base or tuned, in the JS
// global named global; once both are picked they are opened like
// checkpoint URLs.
func (p *ReconstructPage) onCheckpointFiles(global string, picked *bool) app.EventHandler {
	return func(ctx app.Context, e app.Event) {
		app.Window().Set(global, ctx.JSSrc().Get("files"))
		if _, err := pickedNames(global); err != nil {
			p.Status, p.Err = "error", err.Error()
			return
		}
		*picked = true
		if p.pickedBase && p.pickedTuned {
			p.useCheckpoints(ctx, &jobs.Input{Files: "__clefcheckBase"}, &jobs.Input{Files: "__clefcheckTuned"}, "local base and tuned files")
		}
	}
}

func (p *ReconstructPage) onURL(ctx app.Context, e app.Event) {
	u, err := safeHTTP(p.URL)
	if err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	p.Source = u
	p.open(ctx, &jobs.Input{URL: u}, nil, nil)
}

// open reads the adapter's header and lists its modules; base and tuned
// are kept when their checkpoints can be opened (the demo served by
// clefcheck serve has them; a static site does not).
func (p *ReconstructPage) open(ctx app.Context, adapter, base, tuned *jobs.Input) {
	p.Status, p.Prog, p.Block, p.Rebuild = "loading", "reading the adapter's header…", nil, nil
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindOpen, Adapter: adapter, Base: base, Tuned: tuned}, nil)
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.adapter, p.Modules, p.Status = adapter, out.Modules, "ready"
			p.base, p.tuned = nil, nil
			if base != nil && out.CkErr == "" {
				p.base, p.tuned = base, tuned
			}
			if len(out.Modules) > 0 {
				p.Module = out.Modules[0]
			}
		})
	})
}

// onCheckpoints opens base and tuned checkpoints from URLs (single files or
// Hub-style shards with an index), read by range like the adapter.
func (p *ReconstructPage) onCheckpoints(ctx app.Context, e app.Event) {
	var ins [2]*jobs.Input
	for i, raw := range []string{p.BaseURL, p.TunedURL} {
		u, err := safeHTTP(raw)
		if err != nil {
			p.Status, p.Err = "error", "checkpoint URLs: "+err.Error()
			return
		}
		ins[i] = &jobs.Input{URL: u}
	}
	p.useCheckpoints(ctx, ins[0], ins[1], p.BaseURL+" and "+p.TunedURL)
}

// useCheckpoints checks that base and tuned open as checkpoints (headers
// only) and keeps them for the rebuild check.
func (p *ReconstructPage) useCheckpoints(ctx app.Context, base, tuned *jobs.Input, what string) {
	p.Status, p.Prog = "loading", "reading the checkpoints' headers…"
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindOpen, Base: base, Tuned: tuned}, nil)
		if err == nil && out.CkErr != "" {
			err = errors.New(out.CkErr)
		}
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", "checkpoints: "+err.Error()
				return
			}
			p.base, p.tuned, p.CkSource, p.Status = base, tuned, what, "ready"
		})
	})
}

func (p *ReconstructPage) onSample(ctx app.Context, e app.Event) {
	spec := &jobs.Spec{Kind: jobs.KindSample, Adapter: p.adapter, Module: p.Module, Row0: p.Row0, Col0: p.Col0, Size: max(4, min(jobs.MaxBlock, p.Size))}
	ctx.Async(func() {
		out, err := runJob(context.Background(), spec, nil)
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Block, p.BlockMD, p.Status = out.Block, out.Markdown, "ready"
		})
	})
}

func (p *ReconstructPage) onRebuild(ctx app.Context, e app.Event) {
	p.Status, p.Prog = "running", "rebuilding every module…"
	spec := &jobs.Spec{Kind: jobs.KindRebuild, Adapter: p.adapter, Base: p.base, Tuned: p.tuned, Label: p.CkSource}
	ctx.Async(func() {
		out, err := runJob(context.Background(), spec, func(e jobs.Event) {
			if e.Status != nil {
				s := *e.Status
				dispatch(ctx, func(ctx app.Context) { p.Prog = "rebuilding every module: " + s.String() })
			}
		})
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Rebuild, p.RebuildMD, p.RebuildPage, p.Status = out.Rebuild, out.Markdown, 0, "ready"
		})
	})
}
