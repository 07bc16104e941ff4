package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"text/tabwriter"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// AuditCommand audits an adapter directory.
type AuditCommand struct {
	stdout, stderr io.Writer
}

func (c *AuditCommand) Usage() string {
	return `Usage: clefcheck audit [flags] ADAPTER

Audits the PEFT LoRA adapter in directory ADAPTER (adapter_config.json and
adapter_model.safetensors, or shards with adapter_model.safetensors.index.json).
ADAPTER/extraction-report.json is used when present.

Flags:
  --claims NAME|FILE  claims profile to check against (built-in: clef-lora-r256, demo)
  --report FILE       extraction report (default: ADAPTER/extraction-report.json)
  --base SOURCE       base checkpoint, with --tuned: run the rebuild check too (a folder,
                      a URL or a Hub repository; see clefcheck rebuild)
  --tuned SOURCE      tuned checkpoint
` + rebuildUsage() + `  --mode MODE         quick, randomized or exact (default exact):
                      quick skips the spectra (inventory, dtypes, NaN/Inf scan, norms only);
                      randomized checks the SVD form with Gaussian probes, exact Grams only
                      where they reject (see wasm/spectral: the bound holds w.p. ≥ 1 − 2.5e-7);
                      exact computes every pair's Gram matrices
  --quick, --randomized, --exact   short for --mode quick|randomized|exact
  --workers N         parallel workers (default: all cores)
  --attest FILE       write an in-toto Statement v1 (SLSA verification summary predicate:
                      the files and their SHA-256, the claims profile's digest, PASSED or
                      FAILED), unsigned, ready to be signed by standard tools
  --json              print one JSON object {verdict, findings, summary, matrices}
  --matrices          with the table output, list every pair's figures
  --no-progress       no progress on stderr
  --cpuprofile FILE   write a Go CPU profile (for performance work)

Exit status: 0 pass or warn, 1 fail, 2 could not run.
`
}

func (c *AuditCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("audit", c.Usage)
	claimsFlag := fs.String("claims", "", "")
	reportFlag := fs.String("report", "", "")
	baseFlag := fs.String("base", "", "")
	tunedFlag := fs.String("tuned", "", "")
	modeFlag := fs.String("mode", "", "")
	quick := fs.Bool("quick", false, "")
	randomized := fs.Bool("randomized", false, "")
	exact := fs.Bool("exact", false, "")
	workers := fs.Int("workers", 0, "")
	rf := addRebuildFlags(fs)
	asJSON := fs.Bool("json", false, "")
	matrices := fs.Bool("matrices", false, "")
	noProgress := fs.Bool("no-progress", false, "")
	cpuprofile := fs.String("cpuprofile", "", "")
	attest := fs.String("attest", "", "")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Msg: "give exactly one ADAPTER directory (try 'clefcheck world demo' and 'clefcheck audit demo/adapter')"}
	}
	if (*baseFlag == "") != (*tunedFlag == "") {
		return &UsageError{Msg: "--base and --tuned go together"}
	}
	mode, err := modeOf(*modeFlag, map[report.Mode]bool{report.ModeQuick: *quick, report.ModeRandomized: *randomized, report.ModeExact: *exact})
	if err != nil {
		return err
	}
	host := newHost("")
	spec := &jobs.Spec{Kind: jobs.KindAudit, Mode: mode, Label: pos[0], Workers: *workers}
	if spec.Adapter, err = input(host, "ADAPTER", pos[0]); err != nil {
		return err
	}
	if err := claimsSpec(host, spec, *claimsFlag); err != nil {
		return err
	}
	if *reportFlag != "" {
		if spec.ReportFile, err = files(host, "--report", *reportFlag); err != nil {
			return err
		}
	}
	if *baseFlag != "" {
		if spec.Base, err = input(host, "--base", *baseFlag); err != nil {
			return err
		}
		if spec.Tuned, err = input(host, "--tuned", *tunedFlag); err != nil {
			return err
		}
		if err := rf.apply(fs, spec, spec.Base.URL != "" || spec.Tuned.URL != ""); err != nil {
			return err
		}
	} else if rf.used(fs) {
		return &UsageError{Msg: "--rows, --full, --max-bytes and --seed are the rebuild's: give --base and --tuned"}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	out, err := runJob(ctx, spec, host, c.stderr, *noProgress)
	if err != nil {
		return err
	}
	res := out.Audit
	if *attest != "" {
		st, err := report.Attest(res)
		if err != nil {
			fmt.Fprintf(c.stderr, "clefcheck audit: no attestation written: %v\n", err)
		} else if data, err := st.MarshalIndent(); err != nil {
			return err
		} else if err := os.WriteFile(*attest, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return done(c.stdout, *asJSON, res, res.Outcome, func(w io.Writer) {
		printAudit(w, res, *matrices)
		if res.Rebuild != nil {
			printRebuild(w, res.Rebuild)
		}
		fmt.Fprintf(w, "\nverdict: %s\n", res.Verdict.Label())
	})
}

func printAudit(w io.Writer, res *report.Audit, matrices bool) {
	s := res.Summary
	fmt.Fprintf(w, "clefcheck audit of %s (%s, %.2f s)\n", s.Adapter, s.Mode, s.Seconds)
	if len(s.Files) == 0 && s.Tensors == 0 { // nothing was read: no figures to show
		printFindings(w, res.Findings)
		return
	}
	fmt.Fprintf(w, "  %d tensors in %d file(s); %d pairs (%d large, %d small), %d parameters, %d bytes\n", s.Tensors, len(s.Files), s.Pairs, s.Large, s.Small, s.Parameters, s.Bytes)
	fmt.Fprintf(w, "  r = %d, lora_alpha = %g, use_rslora = %v → scaling %g; dtypes %v\n", s.Rank, s.Alpha, s.RSLoRA, s.Scaling, s.DTypes)
	if len(s.Layers) > 0 {
		fmt.Fprintf(w, "  layers %d–%d (%d); modules %s\n", s.Layers[0], s.Layers[len(s.Layers)-1], len(s.Layers), strings.Join(s.Modules, ", "))
	}
	fmt.Fprintf(w, "  expected pairs from %s", s.Expectations)
	if s.Report != "" {
		fmt.Fprintf(w, "; report %s", s.Report)
	}
	if s.Claims != "" {
		fmt.Fprintf(w, "; claims %s", s.Claims)
	}
	fmt.Fprintln(w)
	printProvenance(w, res.Provenance)
	printFindings(w, res.Findings)
	if matrices {
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\nmodule\tout×in\tr\trank\tσ₁\t‖ΔW‖_F\tform\treport σ\treport ‖·‖")
		for _, m := range res.Matrices {
			fmt.Fprintf(tw, "%s\t%d×%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Module, m.Out, m.In, m.Rank,
				intOr(m.NumRank, m.Sigma != nil), first(m.Sigma), num(m.Fro, m.Sigma != nil), ptr(m.FormDev), ptr(m.ReportSV), ptr(m.ReportFro))
		}
		tw.Flush()
	}
}

func printFindings(w io.Writer, fs []report.Finding) {
	counts := map[report.Severity]int{}
	for _, f := range fs {
		counts[f.Severity]++
	}
	fmt.Fprintf(w, "\n%d findings: %d fail, %d could not be checked, %d warn, %d info\n", len(fs), counts[report.Fail], counts[report.Unchecked], counts[report.Warn], counts[report.Info])
	const maxShown = 40
	for i, f := range fs {
		if i == maxShown {
			fmt.Fprintf(w, "  … %d more (use --json for all)\n", len(fs)-maxShown)
			break
		}
		fmt.Fprintf(w, "  %-4s %-17s %s: %s\n", strings.ToUpper(string(f.Severity)), f.Code, f.Subject, f.Message)
	}
}

func first(x []float64) string {
	if len(x) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.4g", x[0])
}

func num(x float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.4g", x)
}

func intOr(x int, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprint(x)
}

func ptr(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.3g", *x)
}

// modeOf is the audit mode of --mode and its shorthands: at most one may
// be given; none means exact (natively the exact Grams are the faster
// deep check, see wasm/spectral).
func modeOf(flag string, short map[report.Mode]bool) (report.Mode, error) {
	var set []report.Mode
	if flag != "" {
		m, err := report.ParseMode(flag)
		if err != nil {
			return "", &UsageError{Msg: "--mode: " + err.Error()}
		}
		set = append(set, m)
	}
	for _, m := range report.Modes {
		if short[m] && (len(set) == 0 || set[0] != m) {
			set = append(set, m)
		}
	}
	switch len(set) {
	case 0:
		return report.ModeExact, nil
	case 1:
		return set[0], nil
	}
	return "", &UsageError{Msg: fmt.Sprintf("choose one audit mode, not %d (--mode, --quick, --randomized and --exact are alternatives)", len(set))}
}

// printProvenance says what was audited: the source down to its commit,
// each file's SHA-256, the claims' digest, the tool.
func printProvenance(w io.Writer, p *report.Provenance) {
	if p == nil {
		return
	}
	s := p.Source
	switch s.Kind {
	case "hub":
		fmt.Fprintf(w, "  source %s/%s at %s (revision %s)", s.Endpoint, s.Repo, s.Commit, s.Revision)
		if s.Path != "" {
			fmt.Fprintf(w, ", folder %s", s.Path)
		}
		fmt.Fprintln(w)
	case "url":
		fmt.Fprintf(w, "  source %s\n", s.URL)
	}
	for _, f := range p.Files {
		listed := ""
		switch {
		case f.Listed != "" && f.Listed == f.SHA256:
			listed = " (as listed)"
		case f.Listed != "":
			listed = " (listed: " + f.Listed + ")"
		}
		fmt.Fprintf(w, "  %s  %d bytes  sha256 %s%s\n", f.Name, f.Size, orDash(f.SHA256), listed)
	}
	if !p.Digests.Computed && p.Digests.Why != "" {
		fmt.Fprintf(w, "  digests not computed: %s\n", p.Digests.Why)
	}
	if p.Claims != nil {
		fmt.Fprintf(w, "  claims %s, sha256 %s\n", p.Claims.Name, p.Claims.SHA256)
	}
	rev := p.Tool.Revision
	if rev == "" {
		rev = "unknown revision"
	}
	fmt.Fprintf(w, "  by %s %s (%s), started %s\n", p.Tool.Name, p.Tool.Version, rev, p.Started.Format("2006-01-02 15:04:05 UTC"))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
