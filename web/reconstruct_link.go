package web

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// The Reconstruct page's link and its sampled rebuild.

// OnNav fills the page from its link: src (or repo, rev, path; "demo" for
// the demo world), endpoint, module, row, col, size, base, tuned, and the
// sampled rebuild's rows, seed and max_mb; run=1 opens the adapter and
// computes the block, then, with base and tuned (or the demo's), runs the
// rebuild check.
func (p *ReconstructPage) OnNav(ctx app.Context) {
	bindPage(ctx)
	q := query(ctx)
	if src := sourceOf(q); src != "" {
		p.URL = src
	}
	if e := q.Get("endpoint"); e != "" {
		p.Endpoint = clip(e, 500)
	}
	p.Module = clip(q.Get("module"), 300)
	num := func(key string, v *int, lo, hi int) {
		if n, err := strconv.Atoi(q.Get(key)); err == nil {
			*v = max(lo, min(hi, n))
		}
	}
	num("row", &p.Row0, 0, 1<<30)
	num("col", &p.Col0, 0, 1<<30)
	num("size", &p.Size, 4, 64)
	num("rows", &p.SampleRows, 0, 1<<20)
	num("max_mb", &p.MaxMB, 0, 1<<30)
	if s := q.Get("seed"); s != "" {
		p.Seed = clip(s, 40)
	}
	p.BaseURL, p.TunedURL = clip(q.Get("base"), 2000), clip(q.Get("tuned"), 2000)
	p.Claims = clip(q.Get("claims"), 100)
	if q.Get("run") != "1" || p.URL == "" {
		return
	}
	p.then = func(ctx app.Context) {
		p.onSample(ctx, app.Event{})
		switch {
		case p.BaseURL != "" && p.TunedURL != "":
			p.then = func(ctx app.Context) { p.onRebuild(ctx, app.Event{}) }
			p.onCheckpoints(ctx, app.Event{})
		case p.base != nil:
			p.onRebuild(ctx, app.Event{})
		}
	}
	if p.URL == "demo" {
		p.onDemo(ctx, app.Event{})
	} else {
		p.onURL(ctx, app.Event{})
	}
}

// link is the page's link with what is filled in (never a token; local
// files cannot be linked).
func (p *ReconstructPage) link() string {
	n := func(v, unset int) string {
		if v == unset {
			return ""
		}
		return strconv.Itoa(v)
	}
	return linkTo("reconstruct", "src", strings.TrimSpace(p.URL), "endpoint", p.Endpoint, "module", p.Module,
		"row", n(p.Row0, 0), "col", n(p.Col0, 0), "size", n(p.Size, 32),
		"base", strings.TrimSpace(p.BaseURL), "tuned", strings.TrimSpace(p.TunedURL),
		"rows", n(p.SampleRows, 0), "seed", strings.TrimSpace(p.Seed), "max_mb", n(p.MaxMB, 0), "claims", p.Claims)
}

// cardCheckpoints offers each claims profile's base and tuned checkpoints
// (Hub repositories at the card's revisions), read by range with a
// sampled rebuild unless rows are chosen.
func (p *ReconstructPage) cardCheckpoints() app.UI {
	var els []app.UI
	for _, pi := range p.profiles {
		if pi.Base == "" || pi.Tuned == "" {
			continue
		}
		pi := pi
		els = append(els, app.Button().ID("recon-card-"+pi.Name).
			Title("base "+pi.Base+", tuned "+pi.Tuned+" (from the Hub, read by range; the profile's bounds judge the rebuild)").
			Text("The checkpoints of "+pi.Name).
			OnClick(func(ctx app.Context, e app.Event) {
				p.BaseURL, p.TunedURL, p.Claims = pi.Base, pi.Tuned, pi.Name
				if p.SampleRows == 0 {
					p.SampleRows = jobs.DefaultRows // never every row of a 27B checkpoint by default
				}
				p.onCheckpoints(ctx, e)
			}))
	}
	return app.Span().Body(els...)
}

// rebuildControls choose between the full rebuild (every row) and a
// sampled one (rows of each module, a seed, a bound on what is read).
func (p *ReconstructPage) rebuildControls() app.UI {
	return app.Span().Class("controls").ID("recon-rebuild-controls").Body(
		app.Label().Body(app.Text("rows per module (0: every row) "),
			field("recon-rows", "number", "0", p.SampleRows, valueTo(&p.SampleRows)).Min(0).Title("a sampled rebuild reads this many rows of each module from both checkpoints and estimates the figures with simultaneous confidence intervals")),
		app.Label().Body(app.Text("seed "), field("recon-seed", "text", "fresh", p.Seed, valueTo(&p.Seed)).Title("the same seed and inputs choose the same rows; empty: a fresh seed, reported")),
		app.Label().Body(app.Text("read at most (MB) "), field("recon-max-mb", "number", "default", p.MaxMB, valueTo(&p.MaxMB)).Min(0).Title("a plan that would read more of the two checkpoints does not start (0: 536.9 MB, i.e. 512 MiB, when sampled; no bound for every row)")),
		button("recon-rebuild", "", "Rebuild check (base + s·B·A vs tuned)", p.Status == "running", p.onRebuild),
	)
}

// parseSeed reads the seed field: empty or 0 for a fresh seed.
func parseSeed(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("seed: %q is not a whole number from 0 to 18446744073709551615", clip(s, 40))
	}
	return n, nil
}

// readLine says what the rebuild read against its plan.
func readLine(r *report.Rebuild) string {
	s := "planned: " + strings.TrimPrefix(r.Plan.String(), "rebuild plan: ")
	if r.BytesRead > 0 {
		s += "; read " + report.MB(r.BytesRead) + " of the checkpoints"
	}
	return s
}

// sampleLine says how a sampled rebuild chose its rows and how sure it is.
func sampleLine(s *report.RebuildSample) string {
	return fmt.Sprintf("sampled: %d rows of each module (seed %d); %s; intervals at %.4g%% together (%d intervals, %.4g%% each, Bonferroni); %d modules decided, %d undecided",
		s.RowsPerModule, s.Seed, s.Estimator, 100*s.Confidence, s.Intervals, 100*s.Level, s.Decided, s.Undecided)
}
