package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

// RebuildCommand checks base + s·B·A against the tuned checkpoint.
type RebuildCommand struct{ stdout, stderr io.Writer }

func (c *RebuildCommand) Usage() string {
	return `Usage: clefcheck rebuild [flags] [--base SOURCE --tuned SOURCE] ADAPTER

For every pair of the adapter in ADAPTER, computes residual_fro, noise_fro,
residual_to_noise and rebuilt_rel_error of W_base + s·B·A against W_tuned (in
row blocks, so memory stays small), and repeats the model card's identity
check (SHA-256 of each tensor's first 256 KiB in both checkpoints, one
range read per tensor head). Checkpoints are single model.safetensors files
or Hub-style shards with model.safetensors.index.json: local folders, URLs,
or Hub repositories (owner/name@rev, hf://…, at HF_ENDPOINT with HF_TOKEN),
read by range at the commit their revision resolves to. Without --base and
--tuned, the claims profile's base and tuned repositories at its revisions
(clef-lora-r256: Qwen/Qwen3.8-27B and Cloudflare/clef).

A sampled rebuild (--rows) reads N rows of each module from both
checkpoints and estimates each module's figures with an interval (all of
them together at 99.9 %): a claim is judged where the interval settles it,
and warns "not enough rows to decide" where it straddles it.
`
}

func (c *RebuildCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("rebuild", c.Usage)
	baseFlag := fs.String("base", "", "base checkpoint `SOURCE`: a folder, a URL or a Hub repository (default: the claims profile's)")
	tunedFlag := fs.String("tuned", "", "tuned checkpoint `SOURCE` (default: the claims profile's)")
	claimsFlag := fs.String("claims", "", "claims profile `NAME|FILE` for the fidelity bounds")
	workers := fs.Int("workers", 0, "parallel workers (default: all cores)")
	rf := addRebuildFlags(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	noProgress := fs.Bool("no-progress", false, "no progress on stderr")
	color := colorFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (*baseFlag == "") != (*tunedFlag == "") {
		return &UsageError{Msg: "need one ADAPTER, and --base and --tuned together (or neither: the claims profile's)"}
	}
	host := newHost("")
	spec := &jobs.Spec{Kind: jobs.KindRebuild, Workers: *workers, Label: *baseFlag + " and " + *tunedFlag}
	if spec.Adapter, err = input(host, "ADAPTER", pos[0]); err != nil {
		return err
	}
	if err := claimsSpec(host, spec, *claimsFlag); err != nil {
		return err
	}
	if *baseFlag == "" {
		if err := claimsCheckpoints(host, spec); err != nil {
			return err
		}
	} else {
		if spec.Base, err = input(host, "--base", *baseFlag); err != nil {
			return err
		}
		if spec.Tuned, err = input(host, "--tuned", *tunedFlag); err != nil {
			return err
		}
	}
	if err := rf.apply(fs, spec, spec.Base.URL != "" || spec.Tuned.URL != ""); err != nil {
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
	if res.Plan != nil {
		fmt.Fprintf(w, "  %s; read %s\n", res.Plan, report.MB(res.BytesRead))
	}
	if s := res.Sample; s != nil {
		fmt.Fprintf(w, "  sampled: %d rows per module, seed %d; estimates with intervals at %.0f%% together (each at %.6g); %d modules decided, %d not\n", s.RowsPerModule, s.Seed, 100*s.Confidence, s.Level, s.Decided, s.Undecided)
	}
	worst := struct{ ratio, rel float64 }{}
	for _, m := range res.Matrices {
		worst.ratio = max(worst.ratio, m.ResidualToNoise)
		worst.rel = max(worst.rel, m.RebuiltRelError)
	}
	fmt.Fprintf(w, "  largest residual/noise %.4g, largest rebuilt relative error %.4g%%\n", worst.ratio, 100*worst.rel)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	shown := 0
	for _, m := range res.Matrices {
		if shown == 0 && res.Sample != nil {
			fmt.Fprintln(tw, "  module\tout×in\trows\tresidual/noise\t(interval)\trebuilt rel. error\t(interval)")
		} else if shown == 0 {
			fmt.Fprintln(tw, "  module\tout×in\tresidual/noise\trebuilt rel. error")
		}
		if shown < 8 || m.ResidualToNoise > 1 {
			if ci, rel := m.ResidualToNoiseCI, m.RebuiltRelErrorCI; ci != nil && rel != nil {
				fmt.Fprintf(tw, "  %s\t%d×%d\t%d/%d\t%.4f\t(%.4f–%.4f)\t%.4g%%\t(%.4g–%.4g%%)\n", m.Module, m.Out, m.In, m.Rows, m.Units, m.ResidualToNoise, ci[0], ci[1], 100*m.RebuiltRelError, 100*rel[0], 100*rel[1])
			} else {
				fmt.Fprintf(tw, "  %s\t%d×%d\t%.4f\t%.4g%%\n", m.Module, m.Out, m.In, m.ResidualToNoise, 100*m.RebuiltRelError)
			}
			shown++
		}
	}
	tw.Flush()
	if len(res.Matrices) > shown {
		fmt.Fprintf(w, "  … %d more (use --json for all)\n", len(res.Matrices)-shown)
	}
	printFindings(w, res.Findings)
}

// claimsCheckpoints sets the spec's checkpoints to its claims profile's
// base and tuned repositories, at HF_ENDPOINT with HF_TOKEN.
func claimsCheckpoints(host *runner.Native, spec *jobs.Spec) error {
	br, bv, tr, tv, err := runner.CheckpointsOf(spec, host.Host())
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	if !runner.ClaimsCheckpoints(spec, br, bv, tr, tv, host.Endpoint, host.Token) {
		return &UsageError{Msg: "need --base and --tuned, or a --claims profile that names the base and tuned checkpoints"}
	}
	spec.Label = spec.Base.URL + " and " + spec.Tuned.URL
	return nil
}
