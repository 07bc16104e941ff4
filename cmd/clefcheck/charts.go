package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

// writeCharts writes a result's figures (drawn by the engine, the same
// SVGs the pages show) to dir as <id>[-<key>].svg, and, for an audit, each
// pair's spectrum as spectra/<module>.svg; it returns how many it wrote.
func writeCharts(ctx context.Context, dir string, out *jobs.Output, host *runner.Native, stderr io.Writer) (int, error) {
	figs := out.Charts
	if a := out.Audit; a != nil {
		for _, m := range a.Matrices {
			if len(m.Sigma) == 0 {
				continue
			}
			o, err := runJob(ctx, &jobs.Spec{Kind: jobs.KindChart, Chart: &jobs.ChartSpec{Pair: m, Tol: a.Summary.Tol}}, host, stderr, true)
			if err != nil {
				return 0, err
			}
			for _, f := range o.Charts {
				f.ID, f.Key = filepath.Join("spectra", m.Module), ""
				figs = append(figs, f)
			}
		}
	}
	n := 0
	for _, f := range figs {
		name := f.ID
		if f.Key != "" {
			name += "-" + f.Key
		}
		path := filepath.Join(dir, filepath.Dir(name), fileName(filepath.Base(name))+".svg")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return n, err
		}
		if err := os.WriteFile(path, []byte(f.SVG+"\n"), 0o644); err != nil {
			return n, fmt.Errorf("--charts: %w", err)
		}
		n++
	}
	return n, nil
}

// fileName keeps a name's letters, digits, '.', '_' and '-' (a module
// name comes from a file).
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
