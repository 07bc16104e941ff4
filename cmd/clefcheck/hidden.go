package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// HiddenCommand compares a server's hidden states with the references.
type HiddenCommand struct{ stdout, stderr io.Writer }

func (c *HiddenCommand) Usage() string {
	return fmt.Sprintf(`Usage: clefcheck hidden [flags] REF CAND

Compares hidden states record by record: REF and CAND are folders of
<id>.safetensors files (reference/hidden/ of the references, and the
capture of 'clefcheck decide --hidden --out DIR', in DIR/hidden). Token ids
must match exactly; then, per captured layer, cosine similarity, NMSE, max
|Δ| and relative L2 error. A record fails when a layer's cosine is below
--min-cosine (default %g, vLLM's bar) or its relative L2 error above
--max-rel-l2 (default %g, torch's bf16 rtol), or when it is missing.

Exit status: 0 pass, 1 fail, 2 could not run.
`, report.DefaultHidden.MinCosine, report.DefaultHidden.MaxRelL2)
}

func (c *HiddenCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("hidden", c.Usage)
	asJSON := fs.Bool("json", false, "print one JSON object {verdict, findings, summary, records}")
	minCos := fs.Float64("min-cosine", report.DefaultHidden.MinCosine, "a layer fails below this cosine similarity `X` (vLLM's bar)")
	maxRel := fs.Float64("max-rel-l2", report.DefaultHidden.MaxRelL2, "a layer fails above this relative L2 error `X` (torch's bf16 rtol)")
	color := colorFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return &UsageError{Msg: "give REF and CAND folders"}
	}
	host := newHost("")
	spec := &jobs.Spec{Kind: jobs.KindHidden, Tol: &report.HiddenTol{MinCosine: *minCos, MaxRelL2: *maxRel}}
	if spec.Ref, err = input(host, "REF", pos[0]); err != nil {
		return err
	}
	if spec.Cand, err = input(host, "CAND", pos[1]); err != nil {
		return err
	}
	out, err := runJob(ctx, spec, host, c.stderr, true)
	if err != nil {
		return err
	}
	res := out.Hidden
	return done(c.stdout, *asJSON, *color, res, res.Outcome, func(w io.Writer) { printHidden(w, res) })
}

func printHidden(w io.Writer, res *report.Hidden) {
	s := res.Summary
	if s.Compared == 0 { // no figures were measured
		fmt.Fprintf(w, "hidden states: %s, none compared\n", count(s.Records, "record"))
		printFindings(w, res.Findings)
		printVerdict(w, res.Verdict)
		return
	}
	fmt.Fprintf(w, "hidden states: %s, %d compared, %d failed; worst cosine %.6f, worst rel. L2 %.4g (tolerances: cos ≥ %g, rel L2 ≤ %g)\n",
		count(s.Records, "record"), s.Compared, s.Failed, s.MinCosine, s.MaxRelL2, s.Tol.MinCosine, s.Tol.MaxRelL2)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  layer\tworst cos\tworst rel L2\tworst NMSE\tmax |Δ|\t")
	for _, l := range s.ByLayer {
		mark := ""
		if !l.OK {
			mark = "✗"
		}
		fmt.Fprintf(tw, "  %d\t%.6f\t%.4g\t%.3g\t%.3g\t%s\n", l.Layer, l.Cosine, l.RelL2, l.NMSE, l.MaxAbs, mark)
	}
	tw.Flush()
	fmt.Fprintln(w, "worst records:")
	for i, r := range res.Records {
		if i == 5 {
			break
		}
		if r.Worst != nil {
			fmt.Fprintf(w, "  %-22s %-8s worst layer %d: cos %.6f, rel L2 %.4g\n", r.ID, r.Status, r.Worst.Layer, r.Worst.Cosine, r.Worst.RelL2)
		} else {
			fmt.Fprintf(w, "  %-22s %-8s %s\n", r.ID, r.Status, r.Detail)
		}
	}
	printFindings(w, res.Findings)
	printVerdict(w, res.Verdict)
}
