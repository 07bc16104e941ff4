// Package audit checks a PEFT LoRA adapter against its configuration, its
// extraction report and a claims profile, and turns what it finds into
// findings with stable codes (FORMATS §6).
//
// The audit reads the adapter by tensor, never whole: the header inventory
// first (pairs, halves, shapes, dtypes, layers, counts), then every pair's
// factors, decoded and scanned for NaN/Inf. Unless quick, each pair's Gram
// matrices A·Aᵀ and Bᵀ·B give the singular values of scaling·B·A, its
// numerical rank and its SVD form (package spectral), which are compared
// with the extraction report.
//
// # Tolerances
//
// The factors are bf16: 8 significant bits, a relative rounding step of 2⁻⁸.
// Rounding A and B moves each singular value of B·A by about that much at
// worst, so the report's singular values and Frobenius norms are compared
// with a relative tolerance of 2⁻⁶ (four bf16 steps; a 10 % change fails by
// a factor of six) plus an absolute floor of 2⁻¹⁰·σ₁ for values near the
// Gram's resolution. See Tolerances.
package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/peft"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
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
	Mode     report.Mode
	Probes   int
	Workers  int // 0: GOMAXPROCS
	Progress func(progress.Status)
	Tol      Tolerances // zero: Default
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

// Job is a pair whose values are to be checked, and where its factors
// are: the file, and the span from the first factor's first byte to the
// last one's end (a remote checker reading by range can group neighbours,
// see Segments, and fetch a group's span at once). File is empty when the
// two factors are in different shards.
type Job struct {
	Module string `json:"module"`
	Bytes  int64  `json:"bytes"`
	File   string `json:"file,omitempty"`
	Begin  int64  `json:"begin"`
	End    int64  `json:"end"`
}

// Figures are what checking one pair's values finds: the fields of Matrix
// filled from the tensors, and the pair's findings. A remote checker sends
// them back as JSON (non-finite values as −1, as in Matrix's JSON).
type Figures struct {
	Module     string           `json:"module"`
	NormA      float64          `json:"norm_a"`
	NormB      float64          `json:"norm_b"`
	Nonfinite  int              `json:"nonfinite"`
	Fro        float64          `json:"fro"`
	Sigma      []float64        `json:"sigma,omitempty"`
	NumRank    int              `json:"num_rank"`
	FormDev    *float64         `json:"form_dev,omitempty"`
	Method     string           `json:"method,omitempty"`
	SigmaBound *float64         `json:"sigma_bound,omitempty"`
	Skipped    string           `json:"skipped,omitempty"`
	Findings   []report.Finding `json:"findings,omitempty"`
}

// Segments groups the jobs in file order into runs of neighbours of about
// size bytes (a job without a location is a run of its own), biggest runs
// first.
func Segments(jobs []Job, size int64) [][]Job {
	sorted := slices.Clone(jobs)
	slices.SortStableFunc(sorted, func(a, b Job) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return cmp.Compare(a.Begin, b.Begin)
	})
	var out [][]Job
	var cur []Job
	var span int64
	for _, j := range sorted {
		if len(cur) > 0 && (j.File == "" || j.File != cur[0].File || span+j.Bytes > size) {
			out = append(out, cur)
			cur, span = nil, 0
		}
		cur = append(cur, j)
		span += j.Bytes
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	weight := func(s []Job) (w int64) {
		for _, j := range s {
			w += j.Bytes
		}
		return w
	}
	slices.SortStableFunc(out, func(a, b []Job) int { return cmp.Compare(weight(b), weight(a)) })
	return out
}

func figuresOf(m *Matrix, fs []report.Finding) Figures {
	return Figures{Module: m.Module, NormA: m.NormA, NormB: m.NormB, Nonfinite: m.Nonfinite, Fro: m.Fro, Sigma: m.Sigma, NumRank: m.NumRank,
		FormDev: m.FormDev, Method: m.Method, SigmaBound: m.SigmaBound, Skipped: m.Skipped, Findings: fs}
}

func apply(m *Matrix, f *Figures) {
	m.NormA, m.NormB, m.Nonfinite, m.Fro, m.Sigma, m.NumRank = f.NormA, f.NormB, f.Nonfinite, f.Fro, f.Sigma, f.NumRank
	m.FormDev, m.Method, m.SigmaBound, m.Skipped = f.FormDev, f.Method, f.SigmaBound, f.Skipped
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
	switch opt.Mode {
	case report.ModeQuick:
		a.res.Summary.Kernel = "scan " + scanKernelName
	case report.ModeRandomized:
		a.res.Summary.Kernel = "probes " + spectral.ProbeKernel() + ", grams " + spectral.Kernel()
	default:
		a.res.Summary.Kernel = spectral.Kernel()
	}
	a.loadConfig(fsys, dir)
	a.yield()
	ck, err := safetensors.OpenCheckpoint(fsys, dir, "adapter_model")
	a.yield()
	if err != nil {
		a.c.Findings = append(a.c.Findings, report.FindingsOf(err, path.Join(dir, "adapter_model.safetensors"))...)
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
		a.res.Summary.Claims = opt.Claims.Name
		a.c.Findings = append(a.c.Findings, opt.Claims.Check()...)
	}
	a.inventory()
	return a, true
}

// Session is the remote side of Options.Remote: the adapter in dir of
// fsys opened with the same options as the audit (its headers read and its
// inventory made), ready to check pairs one at a time. The browser's audit
// workers each hold one.
type Session struct {
	a  *auditor
	st pairState
}

// Open prepares a Session; it fails if the adapter cannot be opened here.
func Open(fsys fs.FS, dir string, opt Options) (*Session, error) {
	opt.Remote, opt.OnInventory, opt.Progress = nil, nil, nil
	a, ok := prepare(fsys, dir, opt)
	if !ok {
		return nil, fmt.Errorf("the adapter cannot be opened here: %v", a.c.Findings)
	}
	return &Session{a: a}, nil
}

// Check checks one pair's values. A module that is not a checkable pair of
// this adapter is an error: both sides must be reading the same files.
func (s *Session) Check(module string) (Figures, error) {
	m := s.a.byName[module]
	if m == nil || m.Skipped != "" {
		return Figures{}, fmt.Errorf("%s is not a checkable pair of this adapter", module)
	}
	fs := s.a.checkPair(&s.st, m, progress.NewMeter("", 0, nil))
	return figuresOf(m, fs), nil
}

// Close releases the adapter's files.
func (s *Session) Close() error { return s.a.ck.Close() }

// Kernel names the kernels this session computes with (Summary.Kernel).
func (s *Session) Kernel() string { return s.a.res.Summary.Kernel }

// CheckPairs checks the named pairs with a Session and opt.Workers
// goroutines, sending each one's figures to emit as it finishes.
func CheckPairs(ctx context.Context, fsys fs.FS, dir string, opt Options, modules []string, emit func(Figures)) error {
	progressFn := opt.Progress
	sess, err := Open(fsys, dir, opt)
	if err != nil {
		return err
	}
	defer sess.Close()
	a := sess.a
	todo := make([]*Matrix, 0, len(modules))
	for _, mod := range modules {
		m := a.byName[mod]
		if m == nil || m.Skipped != "" {
			return fmt.Errorf("%s is not a checkable pair of this adapter", mod)
		}
		todo = append(todo, m)
	}
	meter := progress.NewMeter("", 0, progressFn)
	err = a.checkLocal(ctx, todo, meter, func(m *Matrix, fs []report.Finding) { emit(figuresOf(m, fs)) })
	meter.Finish()
	return err
}

type auditor struct {
	keys   map[*Matrix][2]string // the pairs' tensor names (A, B)
	opt    Options
	c      report.Collector
	res    *Result
	cfg    *peft.Config
	ck     *safetensors.Checkpoint
	rep    *extraction.Report
	byName map[string]*Matrix
}

// yield lets the page breathe (Options.Yield) in long single-threaded work.
func (a *auditor) yield() {
	if a.opt.Yield != nil {
		a.opt.Yield()
	}
}

func (a *auditor) finish() *Result {
	a.res.Outcome = a.c.Outcome()
	return a.res
}

func (a *auditor) loadConfig(fsys fs.FS, dir string) {
	name := path.Join(dir, "adapter_config.json")
	data, err := source.ReadSmall(fsys, name, 16<<20)
	if err != nil {
		a.c.Addf(report.ConfigInvalid, report.Fail, name, nil, nil, "adapter_config.json cannot be read: %v", err)
		return
	}
	cfg, err := peft.ParseConfig(data)
	if err != nil {
		a.c.Findings = append(a.c.Findings, report.FindingsOf(err, name)...)
		return
	}
	a.cfg = cfg
	a.c.Findings = append(a.c.Findings, cfg.Problems()...)
	s := &a.res.Summary
	s.Rank, s.Alpha, s.RSLoRA, s.Unknown = cfg.R, cfg.Alpha, cfg.UseRSLoRA, cfg.UnknownFields()
	s.Scaling = cfg.Scaling("")
	if len(s.Unknown) > 0 {
		a.c.Addf("config.unknown", report.Info, name, s.Unknown, nil, "fields kept but not interpreted: %s", strings.Join(s.Unknown, ", "))
	}
	if p := a.opt.Claims; p != nil {
		if cfg.R != p.Rank {
			a.c.Addf(report.ConfigMismatch, report.Fail, name, cfg.R, p.Rank, "r is %d, the claims say %d", cfg.R, p.Rank)
		}
		want := p.Alpha / float64(p.Rank)
		got := cfg.Scaling("")
		if math.Abs(got-want) > 1e-9*want {
			a.c.Addf(report.ConfigMismatch, report.Fail, name, got, want, "scaling is %g (lora_alpha %g, use_rslora=%v), the claims imply %g", got, cfg.Alpha, cfg.UseRSLoRA, want)
		} else if cfg.Alpha != p.Alpha {
			// ΔW is the same; only the bookkeeping differs (e.g. rsLoRA).
			a.c.Addf(report.ConfigMismatch, report.Info, name, cfg.Alpha, p.Alpha, "lora_alpha is %g where the claims say %g, but the scaling is the same (%g)", cfg.Alpha, p.Alpha, got)
		}
	}
}

func (a *auditor) loadReport(fsys fs.FS, dir string) {
	if a.opt.Report != nil {
		a.rep = a.opt.Report
		a.res.Summary.Report = a.opt.ReportName
		return
	}
	if a.opt.NoAutoReport {
		return
	}
	name := path.Join(dir, "extraction-report.json")
	if !source.Exists(fsys, name) {
		return
	}
	data, err := source.ReadSmall(fsys, name, extraction.MaxSize)
	if err != nil {
		a.c.Findings = append(a.c.Findings, report.FindingsOf(err, name)...)
		return
	}
	rep, err := extraction.ParseYield(data, name, a.yield)
	if err != nil {
		a.c.Findings = append(a.c.Findings, report.FindingsOf(err, name)...)
		return
	}
	a.rep, a.res.Summary.Report = rep, name
}

// expected returns the pairs the adapter should hold and where that comes from.
func (a *auditor) expected() (map[string]claims.Pair, string) {
	if p := a.opt.Claims; p != nil {
		m := map[string]claims.Pair{}
		for _, pr := range p.Pairs() {
			m[pr.Module] = pr
		}
		return m, "claims " + p.Name
	}
	if a.rep != nil && len(a.rep.Matrices) > 0 {
		m := map[string]claims.Pair{}
		for _, x := range a.rep.Matrices {
			pr := claims.Pair{Module: x.Module, Short: peft.ShortModule(x.Module), Layer: -1}
			if len(x.Shape) == 2 {
				pr.Out, pr.In = x.Shape[0], x.Shape[1]
			}
			m[x.Module] = pr
		}
		return m, "extraction report"
	}
	return nil, "the tensors themselves"
}

func (a *auditor) inventory() {
	s := &a.res.Summary
	type halves struct{ a, b *safetensors.TensorInfo }
	pairs := map[string]*halves{}
	adapters := map[string]bool{}
	var extra []string
	for _, name := range a.ck.Names() {
		t, _, _ := a.ck.Tensor(name)
		s.Tensors++
		s.DTypes[t.DType]++
		k := peft.ParseKey(name)
		switch k.Kind {
		case peft.KindLoRA:
			adapters[k.Adapter] = true
			h := pairs[k.Module]
			if h == nil {
				h = &halves{}
				pairs[k.Module] = h
			}
			tt := t
			if k.Half == peft.HalfA {
				if h.a != nil {
					a.c.Addf(report.HeaderInvalid, report.Fail, name, nil, nil, "second lora_A for %s (adapter names differ)", k.Module)
				}
				h.a = &tt
			} else {
				if h.b != nil {
					a.c.Addf(report.HeaderInvalid, report.Fail, name, nil, nil, "second lora_B for %s (adapter names differ)", k.Module)
				}
				h.b = &tt
			}
		case peft.KindEmbedding:
			extra = append(extra, name)
			a.c.Addf(report.ExtraTensors, report.Warn, name, t.Shape, nil, "embedding LoRA factor (%s %v): inventoried, not audited as a linear pair", t.DType, t.Shape)
		default:
			extra = append(extra, name)
			a.c.Addf(report.ExtraTensors, report.Warn, name, t.Shape, nil, "not a LoRA factor (%s %v): a full copy of a module (modules_to_save) replaces the base weight outright", t.DType, t.Shape)
		}
	}
	s.Extra = len(extra)
	if len(adapters) > 1 {
		var names []string
		for n := range adapters {
			names = append(names, fmt.Sprintf("%q", n))
		}
		sort.Strings(names)
		a.c.Addf(report.HeaderInvalid, report.Warn, "adapter_model", names, nil, "tensor keys name several adapters: %s", strings.Join(names, ", "))
	}
	want, from := a.expected()
	s.Expectations = from
	claimDT := ""
	if a.opt.Claims != nil {
		claimDT = a.opt.Claims.DType
	}
	layers := map[int]bool{}
	modules := map[string]bool{}
	a.byName = map[string]*Matrix{}
	var mods []string
	for m := range pairs {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, mod := range mods {
		h := pairs[mod]
		if h.a == nil || h.b == nil {
			have, miss := "lora_B", "lora_A"
			if h.a != nil {
				have, miss = "lora_A", "lora_B"
			}
			a.c.Addf(report.PairMissing, report.Fail, mod, have, "lora_A and lora_B", "has %s but no %s", have, miss)
			continue
		}
		m := &Matrix{Module: mod, Short: peft.ShortModule(mod), DTypeA: h.a.DType, DTypeB: h.b.DType, Layer: -1}
		a.keys[m] = [2]string{h.a.Name, h.b.Name}
		if a.cfg != nil {
			if l, ok := a.cfg.LayerOf(mod); ok {
				m.Layer = l
			}
		} else if l, ok := (&peft.Config{}).LayerOf(mod); ok {
			m.Layer = l
		}
		r := a.rankFor(mod, h.a, h.b)
		m.Rank = r
		m.Scaling = 1
		if a.cfg != nil {
			m.Scaling = a.cfg.Scaling(mod)
		}
		okShape := true
		if len(h.a.Shape) != 2 || len(h.b.Shape) != 2 {
			a.c.Addf(report.ShapeMismatch, report.Fail, mod, fmt.Sprintf("A %v, B %v", h.a.Shape, h.b.Shape), "2-D factors", "factors are not matrices: lora_A %v, lora_B %v", h.a.Shape, h.b.Shape)
			okShape = false
		} else {
			m.In, m.Out = int(h.a.Shape[1]), int(h.b.Shape[0])
			if int(h.a.Shape[0]) != r || int(h.b.Shape[1]) != r {
				a.c.Addf(report.ShapeMismatch, report.Fail, mod, fmt.Sprintf("A %v, B %v", h.a.Shape, h.b.Shape), fmt.Sprintf("A [%d, in], B [out, %d]", r, r),
					"factor shapes do not fit r = %d: lora_A %v, lora_B %v", r, h.a.Shape, h.b.Shape)
				okShape = false
			}
		}
		m.Params = h.a.Len() + h.b.Len()
		s.Parameters += m.Params
		s.Bytes += h.a.Bytes() + h.b.Bytes()
		if okShape {
			m.Large = m.Out > r && m.In > r
			if m.Large {
				s.Large++
			} else {
				s.Small++
			}
		}
		for _, t := range []*safetensors.TensorInfo{h.a, h.b} {
			switch {
			case !dtype.Decodable(t.DType) || t.DType == "BOOL" || strings.HasPrefix(t.DType, "I") || strings.HasPrefix(t.DType, "U"):
				a.c.Addf(report.DtypeUnexpected, report.Fail, t.Name, t.DType, "a float type", "%s is not a float type the audit can read", t.DType)
				m.Skipped = "dtype " + t.DType
			case claimDT != "" && t.DType != claimDT:
				a.c.Addf(report.DtypeUnexpected, report.Fail, t.Name, t.DType, claimDT, "dtype is %s, the claims say %s", t.DType, claimDT)
			}
		}
		if !okShape && m.Skipped == "" {
			m.Skipped = "shape"
		}
		if m.Layer >= 0 {
			layers[m.Layer] = true
		}
		modules[m.Short] = true
		if a.cfg != nil && !a.cfg.TargetsModule(mod) {
			a.c.Addf(report.ConfigMismatch, report.Fail, mod, nil, nil, "the config's target_modules/layers_to_transform do not select this module, yet it has a pair")
		}
		if want != nil {
			pr, ok := want[mod]
			if !ok {
				a.c.Addf(report.PairUnexpected, report.Fail, mod, nil, nil, "a pair for a module outside %s", from)
			} else if okShape && pr.Out > 0 && (pr.Out != m.Out || pr.In != m.In) {
				a.c.Addf(report.ShapeMismatch, report.Fail, mod, []int{m.Out, m.In}, []int{pr.Out, pr.In}, "ΔW is %d × %d, %s says %d × %d", m.Out, m.In, from, pr.Out, pr.In)
			}
		}
		a.byName[mod] = m
		a.res.Matrices = append(a.res.Matrices, m)
	}
	s.Pairs = len(a.res.Matrices)
	for l := range layers {
		s.Layers = append(s.Layers, l)
	}
	sort.Ints(s.Layers)
	for m := range modules {
		s.Modules = append(s.Modules, m)
	}
	sort.Strings(s.Modules)
	if want != nil {
		var miss []string
		for mod := range want {
			if pairs[mod] == nil {
				miss = append(miss, mod)
			}
		}
		sort.Strings(miss)
		for _, mod := range miss {
			a.c.Addf(report.PairMissing, report.Fail, mod, nil, "lora_A and lora_B", "%s calls for a pair here; the adapter has none", from)
		}
	}
	if a.cfg != nil && a.opt.Claims != nil {
		for _, pr := range a.opt.Claims.Pairs() {
			if !a.cfg.TargetsModule(pr.Module) {
				a.c.Addf(report.ConfigMismatch, report.Fail, pr.Module, nil, nil, "the claims call for this module but the config does not target it")
			}
		}
	}
	if p := a.opt.Claims; p != nil {
		d := p.Derived()
		if s.Parameters != d.Parameters {
			a.c.Addf(report.ParamsMismatch, report.Fail, "adapter_model", s.Parameters, d.Parameters, "%d parameters in the pairs, the claims' module table implies %d", s.Parameters, d.Parameters)
		}
		if s.Bytes != d.Bytes {
			a.c.Addf(report.ParamsMismatch, report.Fail, "adapter_model", s.Bytes, d.Bytes, "%d bytes of factor data, the claims imply %d", s.Bytes, d.Bytes)
		}
		if s.Pairs != d.Pairs {
			a.c.Addf(report.ParamsMismatch, report.Fail, "adapter_model", s.Pairs, d.Pairs, "%d pairs, the claims imply %d", s.Pairs, d.Pairs)
		}
	}
}

// rankFor is the r a module's factors must have: the config's (with
// rank_pattern), or, without a config, lora_A's first dimension.
func (a *auditor) rankFor(mod string, ta, tb *safetensors.TensorInfo) int {
	if a.cfg != nil {
		return a.cfg.RankOf(mod)
	}
	if len(ta.Shape) == 2 {
		return int(ta.Shape[0])
	}
	return 0
}

// ---- values ----

func (a *auditor) values(ctx context.Context) error {
	var todo []*Matrix
	var total int64
	for _, m := range a.res.Matrices {
		if m.Skipped == "" {
			todo = append(todo, m)
			ta, _, _ := a.ck.Tensor(a.keys[m][0])
			tb, _, _ := a.ck.Tensor(a.keys[m][1])
			total += ta.Bytes() + tb.Bytes()
		}
	}
	// Largest pairs first, so that no worker is left alone with a big one at the end.
	sort.SliceStable(todo, func(i, j int) bool { return todo[i].Params > todo[j].Params })
	phase := string(a.res.Summary.Mode) + " audit"
	meter := progress.NewMeter(phase, total, a.opt.Progress)
	var err error
	if a.opt.Remote != nil {
		err = a.checkRemote(ctx, todo, meter)
	} else {
		err = a.checkLocal(ctx, todo, meter, func(_ *Matrix, fs []report.Finding) { a.c.Findings = append(a.c.Findings, fs...) })
	}
	meter.Finish()
	if err != nil {
		return err
	}
	a.aggregateRank()
	return nil
}

// checkLocal checks the pairs in todo with opt.Workers goroutines; done is
// called under a lock as each pair finishes.
func (a *auditor) checkLocal(ctx context.Context, todo []*Matrix, meter *progress.Meter, done func(*Matrix, []report.Finding)) error {
	workers := a.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(1, len(todo)))
	jobs := make(chan *Matrix)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &pairState{}
			for m := range jobs {
				fs := a.checkPair(st, m, meter)
				mu.Lock()
				done(m, fs)
				mu.Unlock()
			}
		}()
	}
loop:
	for _, m := range todo {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		if a.opt.Yield != nil {
			if err := a.opt.Yield(); err != nil {
				firstErr = err
				break loop
			}
		}
		jobs <- m
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

// checkRemote hands the pairs to opt.Remote and takes back their figures,
// refusing answers that do not match the pairs asked for.
func (a *auditor) checkRemote(ctx context.Context, todo []*Matrix, meter *progress.Meter) error {
	jobs := make([]Job, len(todo))
	want := map[string]*Matrix{}
	for i, m := range todo {
		ta, ra, _ := a.ck.Tensor(a.keys[m][0])
		tb, rb, _ := a.ck.Tensor(a.keys[m][1])
		jobs[i] = Job{Module: m.Module, Bytes: ta.Bytes() + tb.Bytes()}
		if ra == rb {
			jobs[i].File, jobs[i].Begin, jobs[i].End = ra.Name, min(ta.Offset, tb.Offset), max(ta.Offset+ta.Bytes(), tb.Offset+tb.Bytes())
		}
		want[m.Module] = m
	}
	figs, err := a.opt.Remote(ctx, jobs, meter.Add)
	if err != nil {
		return err
	}
	for i := range figs {
		f := &figs[i]
		m := want[f.Module]
		if m == nil {
			return fmt.Errorf("the remote checker answered for %q, which was not asked for (or twice)", f.Module)
		}
		delete(want, f.Module)
		apply(m, f)
		a.c.Findings = append(a.c.Findings, f.Findings...)
	}
	if len(want) > 0 {
		return fmt.Errorf("the remote checker left %d pairs unchecked", len(want))
	}
	return nil
}

// pairState holds a worker's reusable buffers.
type pairState struct {
	bufA, bufB []byte
	fa, fb     []float32 // decoded factors, for the probes
	row        []float32
	ga, gb     *spectral.Gram
}

func (a *auditor) checkPair(st *pairState, m *Matrix, meter *progress.Meter) []report.Finding {
	var c report.Collector
	ta, ra, _ := a.ck.Tensor(a.keys[m][0])
	tb, rb, _ := a.ck.Tensor(a.keys[m][1])
	var err error
	if st.bufA, err = ra.ReadTensor(ta.Name, st.bufA); err != nil {
		m.Skipped = "unreadable"
		return report.FindingsOf(err, ta.Name)
	}
	meter.Add(ta.Bytes())
	if st.bufB, err = rb.ReadTensor(tb.Name, st.bufB); err != nil {
		m.Skipped = "unreadable"
		return report.FindingsOf(err, tb.Name)
	}
	meter.Add(tb.Bytes())
	r := m.Rank
	var nfA, nfB int
	var ssA, ssB float64
	if a.opt.Mode == report.ModeRandomized {
		if done, fs := a.probePair(st, m, ta, tb); done {
			return fs
		}
	}
	if a.opt.Mode == report.ModeQuick {
		nfA, ssA = scan(ta.DType, st.bufA, &st.row)
		nfB, ssB = scan(tb.DType, st.bufB, &st.row)
	} else {
		if st.ga == nil || st.ga.N != r {
			st.ga, st.gb = spectral.NewGram(r), spectral.NewGram(r)
		} else {
			st.ga.Reset()
			st.gb.Reset()
		}
		nfA, ssA = gramOfA(ta.DType, st.bufA, r, m.In, st.ga, &st.row, a.opt.Yield)
		nfB, ssB = gramOfB(tb.DType, st.bufB, m.Out, r, st.gb, a.opt.Yield)
	}
	m.NormA, m.NormB, m.Nonfinite = math.Sqrt(ssA), math.Sqrt(ssB), nfA+nfB
	if nfA > 0 {
		c.Addf(report.ValuesNonfinite, report.Fail, ta.Name, nfA, 0, "%d NaN or infinite values in lora_A", nfA)
	}
	if nfB > 0 {
		c.Addf(report.ValuesNonfinite, report.Fail, tb.Name, nfB, 0, "%d NaN or infinite values in lora_B", nfB)
	}
	if a.opt.Mode == report.ModeQuick || m.Nonfinite > 0 {
		return c.Findings
	}
	m.Method = "gram"
	ga, gb := st.ga.Sym(), st.gb.Sym()
	sigma, err := spectral.SingularValues(ga, gb, m.Scaling)
	if err != nil {
		c.Addf(report.RankDeficient, report.Fail, m.Module, nil, nil, "spectrum not computed: %v", err)
		return c.Findings
	}
	m.Sigma = sigma
	m.Fro = spectral.FroFromSigma(sigma)
	m.NumRank = spectral.NumericalRank(sigma, m.Out, m.In)
	form := spectral.FormOf(ga, gb).Deviation()
	m.FormDev = &form
	if m.Large && m.NumRank < r {
		c.Addf(report.RankDeficient, report.Fail, m.Module, m.NumRank, r, "numerical rank %d < r = %d (σ below %.3g counted as zero)", m.NumRank, r, spectral.RankTolerance(sigma, m.Out, m.In))
	} else if !m.Large && m.NumRank < min(m.Out, m.In, r) {
		c.Addf(report.RankDeficient, report.Info, m.Module, m.NumRank, min(m.Out, m.In, r), "numerical rank %d, below the %d its smaller side allows (info: the matrix is not larger than r in both dimensions)", m.NumRank, min(m.Out, m.In, r))
	}
	if form > a.opt.Tol.Form {
		c.Addf(report.FactorForm, report.Warn, m.Module, form, a.opt.Tol.Form, "A·Aᵀ and Bᵀ·B are not one diagonal matrix (deviation %.3g > %.3g): the factors are not A = √S·Vᵀ, B = U·√S", form, a.opt.Tol.Form)
	}
	return c.Findings
}

// probePair runs the randomized check; it returns done when the probes
// established the form (the pair's figures are then set), or when values
// were not finite.
func (a *auditor) probePair(st *pairState, m *Matrix, ta, tb safetensors.TensorInfo) (bool, []report.Finding) {
	var c report.Collector
	r := m.Rank
	if cap(st.fa) < r*m.In {
		st.fa = make([]float32, r*m.In)
	}
	if cap(st.fb) < m.Out*r {
		st.fb = make([]float32, m.Out*r)
	}
	fa, fb := st.fa[:r*m.In], st.fb[:m.Out*r]
	nfA, _ := dtype.Decode32(ta.DType, st.bufA, fa)
	nfB, _ := dtype.Decode32(tb.DType, st.bufB, fb)
	if nfA+nfB > 0 {
		return false, nil // the exact path reports them
	}
	seed := uint64(0)
	for _, ch := range m.Module {
		seed = seed*131 + uint64(ch)
	}
	p := spectral.Probe(fa, fb, r, m.In, m.Out, m.Scaling, a.opt.Probes, seed, a.opt.Yield)
	if !p.Accepts(a.opt.Tol.Form) {
		return false, nil
	}
	m.NormA, m.NormB = p.NormA, p.NormB
	m.Sigma, m.Method = p.Sigma, "probes"
	m.Fro = spectral.FroFromSigma(p.Sigma)
	m.NumRank = spectral.NumericalRank(p.Sigma, m.Out, m.In)
	dev := max(p.BoundA, p.BoundB, p.Diag)
	bound := p.SigmaBound
	m.FormDev, m.SigmaBound = &dev, &bound
	if m.Large && m.NumRank < r {
		c.Addf(report.RankDeficient, report.Fail, m.Module, m.NumRank, r, "numerical rank %d < r = %d (σ below %.3g counted as zero)", m.NumRank, r, spectral.RankTolerance(p.Sigma, m.Out, m.In))
	} else if !m.Large && m.NumRank < min(m.Out, m.In, r) {
		c.Addf(report.RankDeficient, report.Info, m.Module, m.NumRank, min(m.Out, m.In, r), "numerical rank %d, below the %d its smaller side allows (info: the matrix is not larger than r in both dimensions)", m.NumRank, min(m.Out, m.In, r))
	}
	return true, c.Findings
}

func (a *auditor) aggregateRank() {
	if a.opt.Mode == report.ModeQuick {
		return
	}
	n := 0
	for _, m := range a.res.Matrices {
		if m.Sigma != nil && !m.Large && m.NumRank == min(m.Out, m.In, m.Rank) {
			n++
		}
	}
	if n > 0 {
		a.c.Addf(report.RankDeficient, report.Info, "adapter_model", n, nil, "%d matrices have a side not larger than r; their numerical rank equals that side, the most it can be", n)
	}
}

// scan decodes a tensor, counting non-finite values and summing squares.
func scan(dt string, b []byte, scratch *[]float32) (nonfinite int, sumsq float64) {
	if dt == "BF16" {
		return scanBF16(b)
	}
	sz := dtype.Size(dt)
	const chunk = 4096
	if cap(*scratch) < chunk {
		*scratch = make([]float32, chunk)
	}
	for off := 0; off < len(b); off += chunk * sz {
		end := min(len(b), off+chunk*sz)
		n := (end - off) / sz
		nf, _ := dtype.Decode32(dt, b[off:end], (*scratch)[:n])
		nonfinite += nf
		sumsq += sumSquares((*scratch)[:n])
	}
	return nonfinite, sumsq
}

func sumSquares(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			s += float64(v) * float64(v)
		}
	}
	return s
}

// ScanKernel is a faster scanBF16 for the bulk of a tensor: n a multiple
// of 8 elements. The browser's audit workers install a WebAssembly SIMD one
// (wasm/browser), after checking it against ScanBF16.
type ScanKernel func(b []byte) (nonfinite int, sumsq float64)

var (
	scanKernel     ScanKernel
	scanKernelName = "go"
)

// SetScanKernel installs k for bf16 scans (nil: the portable loop).
func SetScanKernel(name string, k ScanKernel) {
	scanKernel, scanKernelName = k, name
	if k == nil {
		scanKernelName = "go"
	}
}

// ScanBF16 counts the non-finite values of bf16 data and sums the squares
// of the others (float32 sums of 256 values added in float64).
func ScanBF16(b []byte) (nonfinite int, sumsq float64) { return scanBF16Portable(b) }

// scanBF16 is scan's fast path: the installed kernel for whole vectors of
// 8 values, the portable loop for the rest.
func scanBF16(b []byte) (nonfinite int, sumsq float64) {
	if scanKernel != nil && len(b) >= 16 {
		bulk := len(b) / 16 * 16
		nf, ss := scanKernel(b[:bulk])
		nf2, ss2 := scanBF16Portable(b[bulk:])
		return nf + nf2, ss + ss2
	}
	return scanBF16Portable(b)
}

// scanBF16Portable: exponent test for non-finite values, and squares summed
// in float32 over 256 values, then in float64.
func scanBF16Portable(b []byte) (nonfinite int, sumsq float64) {
	n := len(b) / 2
	for i0 := 0; i0 < n; i0 += 256 {
		end := min(n, i0+256)
		var s float32
		for i := i0; i < end; i++ {
			u := uint32(b[2*i]) | uint32(b[2*i+1])<<8
			if u&0x7f80 == 0x7f80 {
				nonfinite++
				continue
			}
			f := math.Float32frombits(u << 16)
			s += f * f
		}
		sumsq += float64(s)
	}
	return nonfinite, sumsq
}

// gramOfA feeds the columns of A (r × in, row-major bytes) into g as panel
// rows: A·Aᵀ = Σ over columns of a_c·a_cᵀ.
func gramOfA(dt string, b []byte, r, in int, g *spectral.Gram, scratch *[]float32, yield func() error) (nonfinite int, sumsq float64) {
	sz := dtype.Size(dt)
	stride := g.Stride()
	if cap(*scratch) < spectral.PanelRows {
		*scratch = make([]float32, spectral.PanelRows)
	}
	for c0 := 0; c0 < in; c0 += spectral.PanelRows {
		if yield != nil {
			yield()
		}
		k := min(spectral.PanelRows, in-c0)
		p := g.NextPanel(k)
		if dt == "BF16" {
			// Row t of the panel is column c0+t of A: read A's rows in
			// order, write the panel column by column.
			for i := 0; i < r; i++ {
				seg := b[(i*in+c0)*2 : (i*in+c0+k)*2]
				for t := 0; t < k; t++ {
					u := uint32(seg[2*t]) | uint32(seg[2*t+1])<<8
					if u&0x7f80 == 0x7f80 {
						nonfinite++
					}
					p[t*stride+i] = math.Float32frombits(u << 16)
				}
			}
			continue
		}
		for i := 0; i < r; i++ {
			seg := b[(i*in+c0)*sz : (i*in+c0+k)*sz]
			row := (*scratch)[:k]
			nf, _ := dtype.Decode32(dt, seg, row)
			nonfinite += nf
			for t, v := range row {
				p[t*stride+i] = v
			}
		}
	}
	for i := 0; i < r; i++ {
		sumsq += g.Diag(i) // the trace of the Gram is ‖X‖²_F
	}
	return nonfinite, sumsq
}

// gramOfB feeds the rows of B (out × r) into g: Bᵀ·B = Σ over rows of b_iᵀ·b_i.
func gramOfB(dt string, b []byte, out, r int, g *spectral.Gram, yield func() error) (nonfinite int, sumsq float64) {
	sz := dtype.Size(dt)
	stride := g.Stride()
	for i0 := 0; i0 < out; i0 += spectral.PanelRows {
		if yield != nil {
			yield()
		}
		k := min(spectral.PanelRows, out-i0)
		p := g.NextPanel(k)
		for t := 0; t < k; t++ {
			seg := b[(i0+t)*r*sz : (i0+t+1)*r*sz]
			row := p[t*stride : t*stride+r]
			var nf int
			if dt == "BF16" {
				for j := range row {
					u := uint32(seg[2*j]) | uint32(seg[2*j+1])<<8
					if u&0x7f80 == 0x7f80 {
						nf++
					}
					row[j] = math.Float32frombits(u << 16)
				}
			} else {
				nf, _ = dtype.Decode32(dt, seg, row)
			}
			nonfinite += nf
		}
	}
	for i := 0; i < r; i++ {
		sumsq += g.Diag(i) // the trace of the Gram is ‖X‖²_F
	}
	return nonfinite, sumsq
}

// ---- report ----

func (a *auditor) compareReport() {
	rep := a.rep
	if rep == nil {
		return
	}
	name := a.res.Summary.Report
	tol := a.opt.Tol
	if a.cfg != nil && rep.Rank != 0 && rep.Rank != a.cfg.R {
		a.c.Addf(report.ReportMismatch, report.Fail, name, rep.Rank, a.cfg.R, "the report's rank is %d, the config's r is %d", rep.Rank, a.cfg.R)
	}
	if rep.DType != "" {
		for dt, n := range a.res.Summary.DTypes {
			if dt != rep.DType {
				a.c.Addf(report.ReportMismatch, report.Fail, name, dt, rep.DType, "%d tensors are %s, the report says %s", n, dt, rep.DType)
			}
		}
	}
	if rep.TensorsDiffering != nil && *rep.TensorsDiffering != a.res.Summary.Pairs {
		a.c.Addf(report.ReportMismatch, report.Fail, name, a.res.Summary.Pairs, *rep.TensorsDiffering, "the report counts %d differing tensors, the adapter has %d pairs", *rep.TensorsDiffering, a.res.Summary.Pairs)
	}
	if p := a.opt.Claims; p != nil && rep.TensorsCompared != nil && p.TensorsCompared > 0 && *rep.TensorsCompared != p.TensorsCompared {
		a.c.Addf(report.ReportMismatch, report.Fail, name, *rep.TensorsCompared, p.TensorsCompared, "the report compared %d tensors, the claims say %d", *rep.TensorsCompared, p.TensorsCompared)
	}
	if p := a.opt.Claims; p != nil {
		if rep.Base.Repo != "" && (rep.Base != p.Base) {
			a.c.Addf(report.ReportMismatch, report.Fail, name, rep.Base, p.Base, "the report's base is %s@%s, the claims say %s@%s", rep.Base.Repo, rep.Base.Revision, p.Base.Repo, p.Base.Revision)
		}
		if rep.Tuned.Repo != "" && (rep.Tuned != p.Tuned) {
			a.c.Addf(report.ReportMismatch, report.Fail, name, rep.Tuned, p.Tuned, "the report's tuned model is %s@%s, the claims say %s@%s", rep.Tuned.Repo, rep.Tuned.Revision, p.Tuned.Repo, p.Tuned.Revision)
		}
	}
	seen := map[string]bool{}
	for i := range rep.Matrices {
		x := &rep.Matrices[i]
		seen[x.Module] = true
		m := a.byName[x.Module]
		if m == nil {
			if a.opt.Claims != nil {
				a.c.Addf(report.ReportMismatch, report.Fail, x.Module, nil, nil, "the report lists a module the adapter has no pair for")
			}
			continue
		}
		if len(x.Shape) == 2 && m.Skipped != "shape" && (x.Shape[0] != m.Out || x.Shape[1] != m.In) {
			a.c.Addf(report.ReportMismatch, report.Fail, x.Module, []int{m.Out, m.In}, x.Shape, "ΔW is %d × %d, the report says %v", m.Out, m.In, x.Shape)
		}
		a.claimedFidelity(x, m)
		if m.Sigma == nil {
			continue
		}
		if len(x.SingularValues) > 0 {
			worst, at := 0.0, -1
			ref0 := x.SingularValues[0]
			for j := 0; j < len(x.SingularValues) && j < len(m.Sigma); j++ {
				ref := x.SingularValues[j]
				allowed := tol.SigmaRel*math.Abs(ref) + tol.SigmaAbs*math.Abs(ref0)
				d := math.Abs(m.Sigma[j]-ref) / allowed
				if math.IsNaN(d) || allowed == 0 {
					d = math.Inf(1)
				}
				if d > worst || at < 0 {
					worst, at = d, j
				}
			}
			m.ReportSV = &worst
			if at >= 0 && worst > 1 {
				a.c.Addf(report.ReportMismatch, report.Fail, x.Module, m.Sigma[at], x.SingularValues[at],
					"σ%d = %.6g, the report says %.6g (off by %.2f%%, tolerance %.2f%% + %.3g·σ₁)", at+1, m.Sigma[at], x.SingularValues[at],
					100*math.Abs(m.Sigma[at]-x.SingularValues[at])/math.Abs(x.SingularValues[at]), 100*tol.SigmaRel, tol.SigmaAbs)
			}
			if len(x.SingularValues) != m.Rank {
				a.c.Addf(report.ReportMismatch, report.Warn, x.Module, len(x.SingularValues), m.Rank, "the report lists %d singular values for r = %d", len(x.SingularValues), m.Rank)
			}
		}
		if x.DeltaFro != nil {
			// ‖D‖² = ‖B·A‖² + ‖D − B·A‖² when B·A is D's best rank-r
			// approximation; without the residual, ‖B·A‖ ≤ ‖D‖.
			want := *x.DeltaFro
			if x.ResidualFro != nil {
				want = math.Sqrt(max(0, want*want-*x.ResidualFro**x.ResidualFro))
			}
			dev := (m.Fro - want) / (tol.FroRel * want)
			if x.ResidualFro == nil && dev < 0 {
				dev = 0
			}
			ad := math.Abs(dev)
			m.ReportFro = &ad
			if ad > 1 || math.IsNaN(ad) {
				a.c.Addf(report.ReportMismatch, report.Fail, x.Module, m.Fro, want, "‖s·B·A‖_F = %.6g, the report's delta_fro %.6g implies %.6g (tolerance %.2f%%)", m.Fro, *x.DeltaFro, want, 100*tol.FroRel)
			}
		}
	}
	var missing []string
	for _, m := range a.res.Matrices {
		if !seen[m.Module] {
			missing = append(missing, m.Module)
		}
	}
	for _, mod := range missing {
		a.c.Addf(report.ReportMismatch, report.Fail, mod, nil, nil, "the adapter has a pair the report does not list")
	}
}

// claimedFidelity checks the report's own fidelity figures against the
// claims and against each other.
func (a *auditor) claimedFidelity(x *extraction.Matrix, m *Matrix) {
	if x.ResidualFro != nil && x.NoiseFro != nil && x.ResidualToNoise != nil && *x.NoiseFro > 0 {
		ratio := *x.ResidualFro / *x.NoiseFro
		if math.Abs(ratio-*x.ResidualToNoise) > 1e-3*ratio {
			a.c.Addf(report.ReportMismatch, report.Fail, x.Module, *x.ResidualToNoise, ratio, "residual_to_noise %.6g is not residual_fro/noise_fro = %.6g", *x.ResidualToNoise, ratio)
		}
	}
	p := a.opt.Claims
	if p == nil {
		return
	}
	f := p.Fidelity
	if x.ResidualToNoise != nil && m.Large && f.ResidualToNoiseMax > 0 {
		v := *x.ResidualToNoise
		if v > f.ResidualToNoiseMax || v < f.ResidualToNoiseMin {
			a.c.Addf(report.ReportMismatch, report.Fail, x.Module, v, []float64{f.ResidualToNoiseMin, f.ResidualToNoiseMax}, "the report's residual_to_noise %.4g is outside the claimed %.3g–%.4g", v, f.ResidualToNoiseMin, f.ResidualToNoiseMax)
		}
	}
	if x.RebuiltRelError != nil && f.RebuiltRelErrorMax > 0 && *x.RebuiltRelError > f.RebuiltRelErrorMax {
		a.c.Addf(report.ReportMismatch, report.Fail, x.Module, *x.RebuiltRelError, f.RebuiltRelErrorMax, "the report's rebuilt_rel_error %.4g exceeds the claimed %.4g", *x.RebuiltRelError, f.RebuiltRelErrorMax)
	}
}

var fin = report.Fin

// MarshalJSON keeps non-finite floats out of the JSON (they are not JSON),
// as Matrix does.
func (f Figures) MarshalJSON() ([]byte, error) {
	type plain Figures
	f.NormA, f.NormB, f.Fro = fin(f.NormA), fin(f.NormB), fin(f.Fro)
	if f.Sigma != nil {
		s := make([]float64, len(f.Sigma))
		for i, v := range f.Sigma {
			s[i] = fin(v)
		}
		f.Sigma = s
	}
	for _, p := range []**float64{&f.FormDev, &f.SigmaBound} {
		if *p != nil {
			v := fin(**p)
			*p = &v
		}
	}
	return json.Marshal(plain(f))
}
