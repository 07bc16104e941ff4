package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// RebuildCommand checks base + s·B·A against the tuned checkpoint.
type RebuildCommand struct{ stdout, stderr io.Writer }

func (c *RebuildCommand) Usage() string {
	return `Usage: clefcheck rebuild [flags] --base DIR --tuned DIR ADAPTER

For every pair of the adapter in ADAPTER, computes residual_fro, noise_fro,
residual_to_noise and rebuilt_rel_error of W_base + s·B·A against W_tuned (in
row blocks, so memory stays small), and repeats the model card's identity
check (SHA-256 of each tensor's first 256 KiB in both checkpoints).
Checkpoints are single model.safetensors files or Hub-style shards with
model.safetensors.index.json.
`
}

func (c *RebuildCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("rebuild", c.Usage)
	baseFlag := fs.String("base", "", "base checkpoint `DIR` (required)")
	tunedFlag := fs.String("tuned", "", "tuned checkpoint `DIR` (required)")
	claimsFlag := fs.String("claims", "", "claims profile `NAME|FILE` for the fidelity bounds")
	workers := fs.Int("workers", 0, "parallel workers (default: all cores)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	noProgress := fs.Bool("no-progress", false, "no progress on stderr")
	color := colorFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *baseFlag == "" || *tunedFlag == "" {
		return &UsageError{Msg: "need --base DIR, --tuned DIR and one ADAPTER directory"}
	}
	host := newHost("")
	spec := &jobs.Spec{Kind: jobs.KindRebuild, Workers: *workers, Label: *baseFlag + " and " + *tunedFlag}
	if spec.Adapter, err = input(host, "ADAPTER", pos[0]); err != nil {
		return err
	}
	if spec.Base, err = input(host, "--base", *baseFlag); err != nil {
		return err
	}
	if spec.Tuned, err = input(host, "--tuned", *tunedFlag); err != nil {
		return err
	}
	if err := claimsSpec(host, spec, *claimsFlag); err != nil {
		return err
	}
	out, err := runJob(ctx, spec, host, c.stderr, *noProgress)
	if err != nil {
		return err
	}
	res := out.Rebuild
	return done(c.stdout, *asJSON, *color, res, res.Outcome, func(w io.Writer) {
		printRebuild(w, res)
		printVerdict(w, res.Verdict)
	})
}

func printRebuild(w io.Writer, res *report.Rebuild) {
	if res.Compared == 0 && len(res.Matrices) == 0 { // nothing was read
		printFindings(w, res.Findings)
		return
	}
	fmt.Fprintf(w, "\nrebuild: %s compared, %d differ; %s rebuilt\n", count(res.Compared, "tensor"), len(res.Differing), count(len(res.Matrices), "module"))
	worst := struct{ ratio, rel float64 }{}
	for _, m := range res.Matrices {
		worst.ratio = max(worst.ratio, m.ResidualToNoise)
		worst.rel = max(worst.rel, m.RebuiltRelError)
	}
	fmt.Fprintf(w, "  largest residual/noise %.4g, largest rebuilt relative error %.4g%%\n", worst.ratio, 100*worst.rel)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	shown := 0
	for _, m := range res.Matrices {
		if shown == 0 {
			fmt.Fprintln(tw, "  module\tout×in\tresidual/noise\trebuilt rel. error")
		}
		if shown < 8 || m.ResidualToNoise > 1 {
			fmt.Fprintf(tw, "  %s\t%d×%d\t%.4f\t%.4g%%\n", m.Module, m.Out, m.In, m.ResidualToNoise, 100*m.RebuiltRelError)
			shown++
		}
	}
	tw.Flush()
	if len(res.Matrices) > shown {
		fmt.Fprintf(w, "  … %d more (use --json for all)\n", len(res.Matrices)-shown)
	}
	printFindings(w, res.Findings)
}
