package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/peft"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// Tolerances used by the audit; Default documents the values.
type Tolerances struct {
	SigmaRel float64 // singular values against the report, relative
	SigmaAbs float64 // … plus this fraction of σ₁
	FroRel   float64 // Frobenius norms against the report, relative
	Form     float64 // SVD-form deviation (spectral.FormTolerance)
}

// Default tolerances.
var Default = Tolerances{SigmaRel: 1.0 / 64, SigmaAbs: spectral.GramFloor, FroRel: 1.0 / 64, Form: spectral.FormTolerance}

// Options configure an audit.
type Options struct {
	Claims       *claims.Profile    // nil: no claims
	Report       *extraction.Report // nil: look for extraction-report.json beside the adapter
	ReportName   string             // for messages
	NoAutoReport bool               // do not look for the report beside the adapter
	// Mode is how deep the audit goes ("" is exact). Quick skips the
	// spectra. Randomized checks the SVD form of each pair with Gaussian
	// probes (spectral.Probe) and takes the singular values from the
	// factor norms when the probes establish the form, within a stated
	// bound; exact Grams only for the pairs they reject. Probes is their
	// number (default spectral.DefaultProbes).
	Mode    report.Mode
	Probes  int
	Workers int // 0: GOMAXPROCS
	// Reserved, when set, says whether a core is taken by other work of
	// the same job (the runner's read-ahead digest, one SHA-256 stream on
	// a core of its own): while the channel it returns is open, one of
	// the Workers (when there are two or more) waits before its next
	// pair; nil means no core is taken. The hasher then runs at full speed
	// beside the others instead of sharing a core with two workers and
	// ending alone, after them.
	Reserved func() <-chan struct{}
	// InFileOrder takes the pairs in the order their bytes lie in the
	// files (file by file, by offset) instead of largest first: a digest
	// that takes the bytes as they pass (the runner's, from a URL) then
	// sees them nearly in order and needs no second read.
	InFileOrder bool
	// ReadChunk, when positive, makes a quick audit read each factor in
	// pieces of this many bytes, scanning each as it comes, instead of
	// whole: from local files (the page cache) a piece that fits the core's
	// L2 cache is scanned while it is still there, and the bytes cross the
	// memory bus once instead of three times (copy out, then scan). Over a
	// network every piece would be a request: the runner sets it for local
	// files only (Host.LocalChunk).
	ReadChunk int64
	Progress  func(progress.Status)
	Tol       Tolerances // zero: Default
	// OnInventory, when set, receives the result after the header
	// inventory, before any tensor is read (the browser shows it first).
	OnInventory func(*Result)
	// Yield, when set, is called between pairs and between Gram panels (it
	// must then be safe to call from the workers); the browser uses it to
	// let the page breathe. An error returned between pairs cancels.
	Yield func() error
	// Remote, when set, checks the pairs' values elsewhere instead of in
	// this process: the browser hands them to Web Workers, each holding a
	// Session on the same files. It gets the pairs largest first, must call
	// add with the bytes read as it goes, and returns one Figures per pair
	// (any order). Everything else (inventory, report, claims, verdict)
	// stays here.
	Remote func(ctx context.Context, pairs []Job, add func(int64)) ([]Figures, error)
}

// The audit's result types are in package report (the pages read them
// without linking the engine).
type (
	Matrix  = report.AuditMatrix
	Summary = report.AuditSummary
	Result  = report.Audit
)

// Run audits the adapter in directory dir of fsys.
func Run(ctx context.Context, fsys fs.FS, dir string, opt Options) (*Result, error) {
	start := time.Now()
	a, ok := prepare(fsys, dir, opt)
	defer func() { a.res.Summary.Seconds = time.Since(start).Seconds() }()
	if a.fatal != nil { // nothing there, or no way to read it: no verdict about the artifact
		return nil, a.fatal
	}
	if !ok {
		return a.finish(), nil
	}
	defer a.ck.Close()
	if a.opt.OnInventory != nil {
		snap := *a.res
		snap.Findings = append([]report.Finding(nil), a.c.Findings...)
		snap.Verdict = "running"
		a.opt.OnInventory(&snap)
	}
	if err := a.values(ctx); err != nil {
		return nil, err
	}
	a.compareReport()
	return a.finish(), nil
}

// prepare reads the configuration, the checkpoint's headers, the report
// and the claims, and makes the inventory; ok is false when the checkpoint
// cannot be opened (the findings say why).
func prepare(fsys fs.FS, dir string, opt Options) (a *auditor, ok bool) {
	if opt.Tol == (Tolerances{}) {
		opt.Tol = Default
	}
	if opt.Mode == "" {
		opt.Mode = report.ModeExact
	}
	a = &auditor{opt: opt, keys: map[*Matrix][2]string{}, res: &Result{Summary: Summary{Adapter: dir, DTypes: map[string]int{}, Mode: opt.Mode}}}
	a.res.Summary.Kernel = kernelSummary(opt.Mode)
	if opt.Claims != nil {
		// Named before anything is read: the config is compared with the
		// claims even when the checkpoint then cannot be opened.
		a.res.Summary.Claims = opt.Claims.Name
	}
	a.loadConfig(fsys, dir)
	a.yield()
	ck, err := safetensors.OpenCheckpoint(fsys, dir, "adapter_model")
	a.yield()
	if err != nil && (findings.CouldNot(err) || (a.noConfig && errors.Is(err, safetensors.ErrNoCheckpoint))) {
		// Neither a config nor a checkpoint: nothing here to audit.
		a.fatal = err
		return a, false
	}
	if err != nil {
		a.c.Findings = append(a.c.Findings, findings.Of(err, path.Join(dir, "adapter_model.safetensors"))...)
		return a, false
	}
	a.ck = ck
	for _, f := range ck.Files {
		a.res.Summary.Files = append(a.res.Summary.Files, f.Name)
	}
	a.res.Summary.Sharded = ck.Index != nil
	a.loadReport(fsys, dir)
	a.yield()
	if opt.Claims != nil {
		a.c.Findings = append(a.c.Findings, opt.Claims.Check()...)
	}
	a.inventory()
	return a, true
}

type auditor struct {
	keys map[*Matrix][2]string // the pairs' tensor names (A, B)
	opt  Options
	c    report.Collector
	res  *Result
	// fatal: the audit could not be done at all (nothing there, or no way
	// to read it); Run returns it and gives no verdict about the artifact.
	fatal    error
	noConfig bool // adapter_config.json is not there
	cfg      *peft.Config
	ck       *safetensors.Checkpoint
	rep      *extraction.Report
	byName   map[string]*Matrix
	// repSigma: the report's singular values by module, made once
	// (reportSigma; the workers read it).
	repOnce  sync.Once
	repSigma map[string][]float64
	// ref, for module refFor, replaces the report's singular values
	// (Session.CheckRef: the audit's report, passed to a remote checker).
	refFor string
	ref    []float64
}

// yield lets the page breathe (Options.Yield) in long single-threaded work.
func (a *auditor) yield() {
	if a.opt.Yield != nil {
		a.opt.Yield()
	}
}

func (a *auditor) finish() *Result {
	if len(a.res.Matrices) > 0 {
		t := a.opt.Tol
		a.res.Summary.Tol = &report.AuditTol{SigmaRel: t.SigmaRel, SigmaAbs: t.SigmaAbs, FroRel: t.FroRel, Form: t.Form}
		if p := a.opt.Claims; p != nil && p.Fidelity.ResidualToNoiseMax > 0 {
			a.res.Summary.Tol.ResidualToNoise = &[2]float64{p.Fidelity.ResidualToNoiseMin, p.Fidelity.ResidualToNoiseMax}
		}
	}
	for _, m := range a.res.Matrices {
		if m.Sigma != nil && m.Fro >= 0 {
			m.RankTol = spectral.RankTolerance(m.Sigma, m.Out, m.In)
		}
	}
	a.c.Findings = capFindings(a.c.Findings)
	a.res.Outcome = a.c.Outcome()
	return a.res
}

// MaxFindingsPerCode bounds the findings of one code and severity an audit
// lists (a hostile header can make one per tensor); the rest are counted
// in one more finding of that code.
const MaxFindingsPerCode = 1000

func capFindings(fs []report.Finding) []report.Finding {
	type key struct {
		c report.Code
		s report.Severity
	}
	n := map[key]int{}
	out := fs[:0]
	for _, f := range fs {
		k := key{f.Code, f.Severity}
		if n[k]++; n[k] <= MaxFindingsPerCode {
			out = append(out, f)
		}
	}
	for k, c := range n {
		if c > MaxFindingsPerCode {
			out = append(out, report.Finding{Code: k.c, Severity: k.s, Subject: "adapter_model", Measured: c,
				Message: fmt.Sprintf("%d more findings of this code are not listed (audit.MaxFindingsPerCode = %d)", c-MaxFindingsPerCode, MaxFindingsPerCode)})
		}
	}
	return out
}
