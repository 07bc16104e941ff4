package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
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
	BlockFig *jobs.Figure // the block's heatmap (drawn by the engine)
	Rebuild  *report.Rebuild
	// The block and the rebuild as Markdown (from the engine).
	BlockMD, RebuildMD string
	Prog               string
	Source             string // what the adapter is, for the report
	CkSource           string // what the checkpoints are
	// The sampled rebuild: rows of each module (0: every row), the seed
	// ("" or 0: a fresh one, reported) and the bound on the checkpoints'
	// bytes in MB (0: the engine's default when sampled).
	SampleRows int
	Seed       string
	MaxMB      int
	Plan       string // the rebuild's plan, from the engine, before it reads
	Endpoint   string // the Hub endpoint (from the link)
	Link       string // the page's link, once copied
	// Claims names the profile whose bounds judge the rebuild and whose
	// checkpoints "the card's checkpoints" are ("": no profile).
	Claims   string
	profiles []report.ProfileInfo
	then     func(ctx app.Context) // what a link's run=1 does once opened
	adapter  *jobs.Input
	base     *jobs.Input
	tuned    *jobs.Input
	// Whether local base and tuned files were picked (both are needed).
	pickedBase, pickedTuned bool
}

func (p *ReconstructPage) OnInit() {
	p.Status, p.Size = "idle", 32
}

// OnMount asks the engine for the claims profiles (their checkpoints).
func (p *ReconstructPage) OnMount(ctx app.Context) {
	bindPage(ctx)
	ctx.Async(func() {
		out, err := runJob(context.Background(), &jobs.Spec{Kind: jobs.KindClaims}, nil)
		if err == nil {
			dispatch(ctx, func(ctx app.Context) { p.profiles = out.Profiles })
		}
	})
}

func (p *ReconstructPage) Render() app.UI {
	return shell("reconstruct",
		app.H1().Text("Reconstruct"),
		app.P().Class("lead").Text("Computes a block of ΔW = s·B·A from the factors, reading only the bytes it needs, and — given the base and tuned checkpoints — the rebuild figures of every module (residual against the bf16 noise of the tuned weight, relative error) and the card's identity check of every tensor."),
		box("card controls",
			button("recon-demo", "primary", "Load the demo world", p.Status == "loading" || p.Status == "running", p.onDemo),
			labelled("recon-url", "Adapter", field("recon-url", "text", "kvit-s/clef-lora-r256@main, hf://…, a Hub page or a folder URL", p.URL, valueTo(&p.URL))),
			button("recon-open", "", "Open", false, p.onURL),
			picker("recon-adapter-files", "or local adapter files ", false, p.onAdapterFiles),
			shareLink(p.Link, func(l string) { p.Link = l }, p.link),
		),
		app.If(len(p.Modules) > 0, func() app.UI {
			return box("card controls",
				labelled("recon-module", "Module", choice("recon-module", p.Module, setTo(&p.Module), p.moduleChoices()...)),
				app.Label().Body(app.Text("rows from "), field("recon-row", "number", "", p.Row0, valueTo(&p.Row0)).Min(0)),
				app.Label().Body(app.Text("cols from "), field("recon-col", "number", "", p.Col0, valueTo(&p.Col0)).Min(0)),
				app.Label().Body(app.Text("size "), field("recon-size", "number", "", p.Size, valueTo(&p.Size)).Min(4).Max(jobs.MaxBlock)),
				button("recon-sample", "", "Compute block", false, p.onSample),
				labelled("recon-base", "Base checkpoint", field("recon-base", "text", "a URL (model.safetensors or shards + index) or owner/name@rev", p.BaseURL, valueTo(&p.BaseURL))),
				labelled("recon-tuned", "Tuned checkpoint", field("recon-tuned", "text", "a URL (model.safetensors or shards + index) or owner/name@rev", p.TunedURL, valueTo(&p.TunedURL))),
				button("recon-checkpoints", "", "Use these checkpoints", false, p.onCheckpoints),
				p.cardCheckpoints(),
				picker("recon-base-files", "or local base files (shards + index) ", false, p.onCheckpointFiles("__clefcheckBase", &p.pickedBase)),
				picker("recon-tuned-files", "local tuned files ", false, p.onCheckpointFiles("__clefcheckTuned", &p.pickedTuned)),
				app.If(p.base != nil, func() app.UI { return p.rebuildControls() }),
			)
		}),
		app.If(p.Status == "error", func() app.UI { return errorCard(p.Err) }),
		app.If(p.Status == "running" || p.Status == "loading", func() app.UI {
			return app.Div().Class("card").ID("recon-progress").Body(app.Div().Text(p.Prog), app.If(p.Plan != "", func() app.UI { return app.Div().Class("muted").ID("recon-plan").Text(p.Plan) }))
		}),
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
		figure(p.BlockFig),
		app.Div().Class("muted").ID("recon-stats").Text(fmt.Sprintf("min %.4g · max %.4g · mean %.4g · rms %.4g", b.Min, b.Max, b.Mean, b.RMS)),
	)
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
		app.If(r.Plan != nil, func() app.UI { return app.Div().Class("muted").ID("recon-rebuild-plan").Text(readLine(r)) }),
		app.If(r.Sample != nil, func() app.UI { return app.Div().Class("muted").ID("recon-sampling").Text(sampleLine(r.Sample)) }),
		grid("rebuild-modules", nil),
	)
}

func (p *ReconstructPage) onDemo(ctx app.Context, e app.Event) {
	p.URL = "demo"
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

// onURL opens the source typed: the engine parses it (a repository id,
// hf://, a Hub page, a folder URL), as on the Audit page.
func (p *ReconstructPage) onURL(ctx app.Context, e app.Event) {
	src := strings.TrimSpace(p.URL)
	switch src {
	case "":
		p.Status, p.Err = "error", "give the adapter: owner/name[@revision], hf://owner/name, a Hub page or a folder URL"
		return
	case "demo":
		p.onDemo(ctx, e)
		return
	}
	p.Source = src
	p.open(ctx, hubInput(src, p.Endpoint), nil, nil)
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
			if len(out.Modules) > 0 && !slices.Contains(out.Modules, p.Module) {
				p.Module = out.Modules[0]
			}
			if f := p.then; f != nil {
				p.then = nil
				f(ctx)
			}
		})
	})
}

// onCheckpoints opens base and tuned checkpoints from URLs (single files or
// Hub-style shards with an index), read by range like the adapter.
func (p *ReconstructPage) onCheckpoints(ctx app.Context, e app.Event) {
	var ins [2]*jobs.Input
	for i, raw := range []string{p.BaseURL, p.TunedURL} {
		if strings.TrimSpace(raw) == "" {
			p.Status, p.Err = "error", "checkpoints: give both the base and the tuned checkpoint (a URL, owner/name[@revision] or hf://…)"
			return
		}
		ins[i] = hubInput(raw, p.Endpoint)
	}
	p.useCheckpoints(ctx, ins[0], ins[1], strings.TrimSpace(p.BaseURL)+" and "+strings.TrimSpace(p.TunedURL))
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
			if f := p.then; f != nil {
				p.then = nil
				f(ctx)
			}
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
			p.Block, p.BlockMD, p.Status, p.BlockFig = out.Block, out.Markdown, "ready", figureOf(out.Charts, "heatmap", "")
		})
	})
}

func (p *ReconstructPage) onRebuild(ctx app.Context, e app.Event) {
	spec := &jobs.Spec{Kind: jobs.KindRebuild, Adapter: p.adapter, Base: p.base, Tuned: p.tuned, Label: p.CkSource, Claims: p.Claims,
		Rows: max(0, p.SampleRows), MaxBytes: int64(max(0, p.MaxMB)) * 1e6}
	seed, err := parseSeed(p.Seed)
	if err != nil {
		p.Status, p.Err = "error", err.Error()
		return
	}
	spec.Seed = seed
	what := "rebuilding every row of every module"
	if spec.Rows > 0 {
		what = fmt.Sprintf("rebuilding %d sampled rows of each module", spec.Rows)
	}
	p.Status, p.Prog, p.Plan = "running", what+"…", ""
	ctx.Async(func() {
		out, err := runJob(context.Background(), spec, func(e jobs.Event) {
			switch {
			case e.Plan != nil:
				plan := e.Plan.String()
				dispatch(ctx, func(ctx app.Context) { p.Plan = plan })
			case e.Status != nil:
				s := *e.Status
				dispatch(ctx, func(ctx app.Context) { p.Prog = what + ": " + s.String() })
			}
		})
		dispatch(ctx, func(ctx app.Context) {
			if err != nil {
				p.Status, p.Err = "error", err.Error()
				return
			}
			p.Rebuild, p.RebuildMD, p.Status = out.Rebuild, out.Markdown, "ready"
		})
	})
}
