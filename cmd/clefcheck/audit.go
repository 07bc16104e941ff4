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

The deep check is exact unless --mode says otherwise: quick skips the spectra
(inventory, dtypes, NaN/Inf scan, norms only); randomized checks the SVD form
with Gaussian probes and computes exact Grams only where they reject (see
wasm/spectral: the bound holds w.p. ≥ 1 − 2.5e-7); exact computes every pair's
Gram matrices. Natively the exact route is the faster one (a SIMD Gram kernel;
the probes have none here), so randomized takes the exact Grams for every pair
too: it is the browser's fast mode, and exact is the CLI's default.
With --base and --tuned (folders, URLs or Hub repositories, read by range
at the commit their revision resolves to) the rebuild check runs too; from a
URL or a Hub repository it is sampled by default (see clefcheck help rebuild).

Exit status: 0 pass or warn, 1 fail, 2 could not run.
`
}

func (c *AuditCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("audit", c.Usage)
	claimsFlag := fs.String("claims", "", "claims profile `NAME|FILE` to check against: a built-in one (clef-lora-r256, demo) or a JSON file")
	reportFlag := fs.String("report", "", "extraction report `FILE` (default: ADAPTER/extraction-report.json)")
	baseFlag := fs.String("base", "", "base checkpoint `SOURCE` (a folder, a URL or a Hub repository); with --tuned, run the rebuild check too")
	tunedFlag := fs.String("tuned", "", "tuned checkpoint `SOURCE`")
	modeFlag := fs.String("mode", "", "the deep check's `MODE`: quick, randomized or exact (default exact)")
	quick := fs.Bool("quick", false, "short for --mode quick")
	randomized := fs.Bool("randomized", false, "short for --mode randomized")
	exact := fs.Bool("exact", false, "short for --mode exact")
	workers := fs.Int("workers", 0, "parallel workers (default: all cores)")
	rf := addRebuildFlags(fs)
	asJSON := fs.Bool("json", false, "print one JSON object {verdict, findings, summary, matrices}")
	matrices := fs.Bool("matrices", false, "with the text output, list every pair's figures")
	noProgress := fs.Bool("no-progress", false, "no progress on stderr")
	noDigest := fs.Bool("no-digest", false, "do not compute the files' SHA-256 (the provenance then says so; one core hashes at ~1.5 GB/s, which bounds the quick audit)")
	cpuprofile := fs.String("cpuprofile", "", "write a Go CPU profile to `FILE` (for performance work)")
	memprofile := fs.String("memprofile", "", "write a Go allocation profile to `FILE` at the end (for performance work)")
	attest := fs.String("attest", "", "write to `FILE` an in-toto Statement v1 (SLSA verification summary predicate: the files and their SHA-256, the claims profile's digest, PASSED or FAILED), unsigned, ready to be signed by standard tools")
	charts := fs.String("charts", "", "write the charts as SVG files to `DIR`: the adapter's modules × layers heatmaps (pair-grid-METRIC.svg) and each pair's spectrum (spectra/MODULE.svg), as the Audit page draws them")
	color := colorFlag(fs)
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
	spec := &jobs.Spec{Kind: jobs.KindAudit, Mode: mode, Label: pos[0], Workers: *workers, NoDigest: *noDigest}
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
	if *memprofile != "" {
		defer func() {
			if f, err := os.Create(*memprofile); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
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
	if *charts != "" {
		n, err := writeCharts(ctx, *charts, out, host, c.stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "clefcheck audit: %d charts written to %s\n", n, *charts)
	}
	return done(c.stdout, *asJSON, *color, res, res.Outcome, func(w io.Writer) {
		printAudit(w, res, *matrices)
		if res.Rebuild != nil {
			printRebuild(w, res.Rebuild)
		}
		printVerdict(w, res.Verdict)
	})
}

func printAudit(w io.Writer, res *report.Audit, matrices bool) {
	s := res.Summary
	fmt.Fprintf(w, "clefcheck audit of %s (%s mode, %.2f s)\n", s.Adapter, s.Mode, s.Seconds)
	if len(s.Files) == 0 && s.Tensors == 0 { // nothing was read: no figures to show
		printFindings(w, res.Findings)
		return
	}
	fmt.Fprintf(w, "  %s in %s; %s (%d large, %d small), %s, %s\n", count(s.Tensors, "tensor"), count(len(s.Files), "file"), count(s.Pairs, "pair"), s.Large, s.Small, count(int(s.Parameters), "parameter"), size(s.Bytes))
	fmt.Fprintf(w, "  r = %d, lora_alpha = %g, use_rslora = %t → scaling %g", s.Rank, s.Alpha, s.RSLoRA, s.Scaling)
	if len(s.DTypes) > 0 {
		fmt.Fprintf(w, "; dtypes %s", tally(s.DTypes))
	}
	fmt.Fprintln(w)
	if len(s.Layers) > 0 {
		fmt.Fprintf(w, "  layers %d–%d (%d); modules %s\n", s.Layers[0], s.Layers[len(s.Layers)-1], len(s.Layers), strings.Join(s.Modules, ", "))
	}
	var from []string
	if s.Expectations != "" {
		from = append(from, "expected pairs from "+s.Expectations)
	}
	if s.Report != "" {
		from = append(from, "report "+s.Report)
	}
	if s.Claims != "" {
		from = append(from, "claims "+s.Claims)
	}
	if len(from) > 0 {
		fmt.Fprintf(w, "  %s\n", strings.Join(from, "; "))
	}
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
	if len(fs) == 0 {
		fmt.Fprintln(w, "\nno findings")
		return
	}
	var parts []string
	for _, sv := range []struct {
		sev  report.Severity
		what string
	}{{report.Fail, "fail"}, {report.Unchecked, "could not be checked"}, {report.Warn, "warn"}, {report.Info, "info"}} {
		if n := counts[sv.sev]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, sv.what))
		}
	}
	fmt.Fprintf(w, "\n%s: %s\n", count(len(fs), "finding"), strings.Join(parts, ", "))
	// Findings that could not be checked for one cause (every pair's
	// read stopped by one dead host) are shown once, with their count.
	alike := map[string]int{}
	key := func(f report.Finding) string { return string(f.Code) + "\x00" + report.Cause(f) }
	for _, f := range fs {
		if f.Severity == report.Unchecked {
			alike[key(f)]++
		}
	}
	const maxShown = 40
	shown := 0
	for i, f := range fs {
		more := ""
		if f.Severity == report.Unchecked {
			k := key(f)
			n, ok := alike[k]
			if !ok {
				continue // shown with the first alike
			}
			delete(alike, k)
			if n > 1 {
				more = fmt.Sprintf(" (and %d more alike)", n-1)
			}
		}
		if shown == maxShown {
			fmt.Fprintf(w, "  … %d more (use --json for all)\n", len(fs)-i)
			break
		}
		shown++
		fmt.Fprintf(w, "  %s %-17s %s%s: %s\n", paint(w, string(f.Severity), fmt.Sprintf("%-5s", strings.ToUpper(string(f.Severity))), false), f.Code, f.Subject, more, f.Message)
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
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, f := range p.Files {
		listed := ""
		switch {
		case f.Listed != "" && f.Listed == f.SHA256:
			listed = " (as listed)"
		case f.Listed != "":
			listed = " (listed: " + f.Listed + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\tsha256 %s%s\n", f.Name, size(f.Size), orDash(f.SHA256), listed)
	}
	tw.Flush()
	if !p.Digests.Computed && p.Digests.Why != "" {
		fmt.Fprintf(w, "  digests not computed: %s\n", p.Digests.Why)
	}
	if p.Claims != nil {
		fmt.Fprintf(w, "  claims %s, sha256 %s\n", p.Claims.Name, p.Claims.SHA256)
	}
	rev := "revision unknown"
	if p.Tool.Revision != "" {
		rev = "revision " + p.Tool.Revision
		if p.Tool.Modified {
			rev += " (modified)"
		}
	}
	fmt.Fprintf(w, "  by %s %s, %s, started %s\n", p.Tool.Name, p.Tool.Version, rev, p.Started.Format("2006-01-02 15:04:05 UTC"))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
