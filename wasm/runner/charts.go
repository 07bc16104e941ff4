package runner

import (
	"errors"

	"github.com/kvit-s/clefcheck/wasm/chart"
	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// The charts are drawn here, in the engine, and travel with the output as
// SVG strings: the pages insert them as they are (app.wasm's budget has
// no room for the chart code), the CLI writes them to files.

func fig(c *chart.Chart, key, label string) jobs.Figure {
	return jobs.Figure{ID: c.ID, Key: key, Label: label, Caption: c.Caption, SVG: c.SVG}
}

// figures are a result's charts: an audit's heatmap for each metric it
// has, a block's ΔW, a hidden comparison's drift, a batch's latency and
// agreement.
func figures(out *jobs.Output) []jobs.Figure {
	var fs []jobs.Figure
	add := func(c *chart.Chart, key, label string) {
		if c != nil {
			fs = append(fs, fig(c, key, label))
		}
	}
	if a := out.Audit; a != nil && len(a.Matrices) > 0 {
		kv := chart.Metrics(a)
		for i := 0; i+1 < len(kv); i += 2 {
			add(chart.PairGrid("pair-grid", a, kv[i]), kv[i], kv[i+1])
		}
	}
	if out.Block != nil {
		add(chart.Block("heatmap", out.Block), "", "")
	}
	if h := out.Hidden; h != nil {
		add(chart.Drift("drift-plot", h.Summary.ByLayer, h.Summary.Tol, " over the records", true), "", "")
	}
	if d := out.Decisions; d != nil {
		add(chart.Latency("latency-histogram", d.Records), "", "")
		add(chart.Agreement("agreement-chart", d.Records), "", "")
		if d.Summary.Hidden != nil {
			add(chart.Drift("drift-plot", d.Summary.Hidden.ByLayer, d.Summary.Hidden.Tol, " over the records", true), "", "")
		}
	}
	return fs
}

// runChart draws the one figure a chart job asks for.
func runChart(spec *jobs.Spec) (*jobs.Output, error) {
	c := spec.Chart
	var ch *chart.Chart
	switch {
	case c == nil:
		return nil, errors.New("runner: a chart job without a chart")
	case c.Pair != nil:
		ch = chart.Spectrum("pair-spectrum", c.Pair, c.Tol)
	case len(c.Layers) > 0:
		ch = chart.Drift("record-drift", c.Layers, c.HiddenTol, c.What, false)
	}
	out := &jobs.Output{}
	if ch != nil {
		out.Charts = []jobs.Figure{fig(ch, "", "")}
	}
	return out, nil
}
