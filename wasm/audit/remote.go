package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// Job is a pair whose values are to be checked, and where its factors
// are: the file, and the span from the first factor's first byte to the
// last one's end (a remote checker reading by range can group neighbours,
// see Segments, and fetch a group's span at once). File is empty when the
// two factors are in different shards. Ref is the extraction report's
// singular values for the pair, when the audit has a report that lists
// them: the checker's session holds no report of its own (it would be
// read and parsed again in each one, and might not be the audit's) and
// passes Ref to CheckRef.
type Job struct {
	Module string    `json:"module"`
	Bytes  int64     `json:"bytes"`
	File   string    `json:"file,omitempty"`
	Begin  int64     `json:"begin"`
	End    int64     `json:"end"`
	Ref    []float64 `json:"ref_sigma,omitempty"`
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
	if a.fatal != nil { // unreachable, refused, or nothing there
		return nil, a.fatal
	}
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

// CheckRef checks one pair as Check does, with ref as the report's
// singular values for it (Job.Ref; nil: none), in place of any report the
// session opened with. They decide, as the report's do in the audit,
// whether the diagonal shortcut's bound is tight enough for the comparison
// with the report (diagonalDecides). A Session is not for concurrent use.
func (s *Session) CheckRef(module string, ref []float64) (Figures, error) {
	if s.a.byName[module] == nil {
		return s.Check(module) // its error
	}
	s.a.refFor, s.a.ref = module, ref
	defer func() { s.a.refFor, s.a.ref = "", nil }()
	return s.Check(module)
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

// checkRemote hands the pairs to opt.Remote and takes back their figures,
// refusing answers that do not match the pairs asked for.
func (a *auditor) checkRemote(ctx context.Context, todo []*Matrix, meter *progress.Meter) error {
	jobs := make([]Job, len(todo))
	want := map[string]*Matrix{}
	for i, m := range todo {
		ta, ra, _ := a.ck.Tensor(a.keys[m][0])
		tb, rb, _ := a.ck.Tensor(a.keys[m][1])
		jobs[i] = Job{Module: m.Module, Bytes: ta.Bytes() + tb.Bytes(), Ref: a.reportSigma(m.Module)}
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
