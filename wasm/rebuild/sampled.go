package rebuild

import (
	"math"
	"strconv"
	"sync/atomic"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// sampling is a sampled rebuild's design: the rows per module, the seed,
// and the quantile every interval uses.
type sampling struct {
	rows      int
	seed      uint64
	intervals int     // the intervals the Bonferroni level is shared over
	p         float64 // each interval is [est ± t_{m−1}(p)·SE]
	decided   int
	undecided int
}

// newSampling chooses every module's rows and the intervals' level: two
// intervals (residual/noise, rebuilt relative error) for each module of
// which not every row is read.
func newSampling(jobs []*job, opt Options) *sampling {
	s := &sampling{rows: opt.Rows, seed: opt.Seed}
	if s.seed == 0 {
		s.seed = freshSeed()
	}
	for _, j := range jobs {
		j.rows = chooseRows(s.seed, j.m.Module, j.units, opt.Rows)
		if len(j.rows) < j.units {
			s.intervals += 2
		}
	}
	s.p = 1 - (1-Family)/float64(2*max(1, s.intervals))
	return s
}

func (s *sampling) info() *report.RebuildSample {
	level := 1.0
	if s.intervals > 0 {
		level = 1 - (1-Family)/float64(s.intervals)
	}
	return &report.RebuildSample{RowsPerModule: s.rows, Seed: s.seed, Estimator: Estimator, Confidence: Family, Level: level, Intervals: s.intervals}
}

// one reads a module's sampled rows from both checkpoints and estimates
// its figures. A stored row is a row of the out × in weight (its product
// row s·B_i·A needs B's row i and A whole), or with fan_in_fan_out a row
// of the stored in × out weight, that is a column x of W (s·B·A[:, x]
// needs A's column x and B whole). Consecutive chosen rows are read
// together, up to 256 at a time.
func (s *sampling) one(j *job, meter *progress.Meter, read *atomic.Int64) []report.Finding {
	m := j.m
	r := j.r
	in, out := int(j.ta.Shape[1]), int(j.tb.Shape[0])
	m.Out, m.In, m.Large = out, in, out > r && in > r
	fail := func(err error, name string) []report.Finding {
		m.Out = 0
		return findings.Of(err, name)
	}
	a, err := decodeAll(j.ra, j.ta)
	if err != nil {
		return fail(err, j.ta.Name)
	}
	k := len(j.rows)
	left := make([]float32, k*r) // the chosen rows' left factors, k × r
	var right blas32.General     // and the right one
	tr := blas.NoTrans
	if j.fanIn {
		b, err := decodeAll(j.rb, j.tb)
		if err != nil {
			return fail(err, j.tb.Name)
		}
		for c, x := range j.rows {
			for q := 0; q < r; q++ {
				left[c*r+q] = a[q*in+x]
			}
		}
		right, tr = blas32.General{Rows: out, Cols: r, Stride: r, Data: b}, blas.Trans
	} else {
		if err := readB(j, left); err != nil {
			return fail(err, j.tb.Name)
		}
		right = blas32.General{Rows: r, Cols: in, Stride: in, Data: a}
	}
	cols := int(j.tw.Shape[1])
	y, x, t, d := make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
	const run = 256
	prod := make([]float32, min(run, k)*cols)
	wblk := make([]float32, min(run, k)*cols)
	tblk := make([]float32, min(run, k)*cols)
	var raw []byte
	for c0 := 0; c0 < k; {
		c1 := c0 + 1 // [c0, c1): consecutive stored rows
		for c1 < k && c1-c0 < run && j.rows[c1] == j.rows[c1-1]+1 {
			c1++
		}
		n := c1 - c0
		u0 := int64(j.rows[c0])
		L := blas32.General{Rows: n, Cols: r, Stride: r, Data: left[c0*r : c1*r]}
		P := blas32.General{Rows: n, Cols: cols, Stride: cols, Data: prod[:n*cols]}
		blas32.Gemm(blas.NoTrans, tr, float32(j.s), L, right, 0, P)
		for _, x := range []struct {
			r   *safetensors.Reader
			t   safetensors.TensorInfo
			dst []float32
		}{{j.rw, j.tw, wblk}, {j.rt, j.tt, tblk}} {
			if raw, err = x.r.ReadRange(x.t, u0*j.rowBytes, (u0+int64(n))*j.rowBytes, raw); err != nil {
				return fail(err, x.t.Name)
			}
			read.Add(int64(len(raw)))
			if _, err := dtype.Decode32(x.t.DType, raw, x.dst[:n*cols]); err != nil {
				return fail(err, x.t.Name)
			}
		}
		meter.Add(2 * int64(n) * j.rowBytes)
		for c := 0; c < n; c++ {
			var res2, noise2, tuned2, delta2 float64
			for q := c * cols; q < (c+1)*cols; q++ {
				w, tv := float64(wblk[q]), float64(tblk[q])
				dv := tv - w
				e := dv - float64(prod[q])
				res2 += e * e
				delta2 += dv * dv
				tuned2 += tv * tv
				u := dtype.ULPBF16(tblk[q])
				noise2 += u * u / 12
			}
			y[c0+c], x[c0+c], t[c0+c], d[c0+c] = res2, noise2, tuned2, delta2
		}
		c0 = c1
	}
	N := j.units
	m.Rows, m.Units = k, N
	m.DeltaFro, m.ResidualFro, m.NoiseFro = math.Sqrt(total(d, N)), math.Sqrt(total(y, N)), math.Sqrt(total(x, N))
	if est, lo, hi, ok := ratio(y, x, N, s.p); ok {
		m.ResidualToNoise = math.Sqrt(est)
		m.ResidualToNoiseCI = &[2]float64{math.Sqrt(lo), math.Sqrt(hi)}
	}
	if est, lo, hi, ok := ratio(y, t, N, s.p); ok {
		m.RebuiltRelError = math.Sqrt(est)
		m.RebuiltRelErrorCI = &[2]float64{math.Sqrt(lo), math.Sqrt(hi)}
	}
	var c report.Collector
	finiteFigures(&c, m, j.s)
	for _, ci := range []*[2]float64{m.ResidualToNoiseCI, m.RebuiltRelErrorCI} {
		if ci != nil && (math.IsNaN(ci[0]+ci[1]) || math.IsInf(ci[0]+ci[1], 0)) {
			ci[0], ci[1] = -1, -1
		}
	}
	return c.Findings
}

// readB decodes the chosen rows of B (out × r) into dst (k × r), reading
// consecutive rows together.
func readB(j *job, dst []float32) error {
	sz := int64(dtype.Size(j.tb.DType))
	rb := int64(j.r) * sz
	var raw []byte
	var err error
	for c0 := 0; c0 < len(j.rows); {
		c1 := c0 + 1
		for c1 < len(j.rows) && j.rows[c1] == j.rows[c1-1]+1 {
			c1++
		}
		u0 := int64(j.rows[c0])
		if raw, err = j.rb.ReadRange(j.tb, u0*rb, (u0+int64(c1-c0))*rb, raw); err != nil {
			return err
		}
		if _, err := dtype.Decode32(j.tb.DType, raw, dst[c0*j.r:c1*j.r]); err != nil {
			return err
		}
		c0 = c1
	}
	return nil
}

// judge compares a sampled module's intervals with the claims and the
// report: a bound is judged only where the interval is on one side of it
// (wholly beyond: fail; wholly within: pass); an interval that straddles
// it warns that more rows are needed.
func (s *sampling) judge(c *report.Collector, m *Matrix, p *claims.Profile, rep *extraction.Report) {
	ci, rel := m.ResidualToNoiseCI, m.RebuiltRelErrorCI
	if ci == nil || rel == nil || ci[0] < 0 || rel[0] < 0 {
		return // not finite, or no noise: finiteFigures said so
	}
	of := func() string {
		if m.Rows >= m.Units {
			return "all " + strconv.Itoa(m.Units) + " rows"
		}
		return strconv.Itoa(m.Rows) + " of " + strconv.Itoa(m.Units) + " rows"
	}
	undecided := false
	bound := DefaultRatioBound
	if p != nil && p.Fidelity.ResidualToNoiseMax > 0 {
		bound = p.Fidelity.ResidualToNoiseMax
	}
	switch {
	case ci[0] > bound:
		c.Addf(report.RebuildError, report.Fail, m.Module, ci[:], bound, "residual is %.4g × the bf16 noise of the tuned weight (interval %.4g–%.4g from %s), above the bound %.4g", m.ResidualToNoise, ci[0], ci[1], of(), bound)
	case ci[1] > bound:
		undecided = true
		c.Addf(report.RebuildError, report.Warn, m.Module, ci[:], bound, "residual is %.4g × the bf16 noise (interval %.4g–%.4g from %s), which straddles the bound %.4g: not enough rows to decide (sample more rows)", m.ResidualToNoise, ci[0], ci[1], of(), bound)
	}
	if p != nil && m.Large && p.Fidelity.ResidualToNoiseMin > 0 && ci[1] < p.Fidelity.ResidualToNoiseMin {
		c.Addf(report.RebuildError, report.Info, m.Module, ci[:], p.Fidelity.ResidualToNoiseMin, "residual is %.4g × the noise (interval %.4g–%.4g from %s), below the claimed %.3g (better than claimed)", m.ResidualToNoise, ci[0], ci[1], of(), p.Fidelity.ResidualToNoiseMin)
	}
	if p != nil && p.Fidelity.RebuiltRelErrorMax > 0 {
		mx := p.Fidelity.RebuiltRelErrorMax
		switch {
		case rel[0] > mx:
			c.Addf(report.RebuildError, report.Fail, m.Module, rel[:], mx, "rebuilt weight differs from the tuned one by %.4g%% (interval %.4g–%.4g%% from %s), the claims say at most %.4g%%", 100*m.RebuiltRelError, 100*rel[0], 100*rel[1], of(), 100*mx)
		case rel[1] > mx:
			undecided = true
			c.Addf(report.RebuildError, report.Warn, m.Module, rel[:], mx, "rebuilt weight differs from the tuned one by %.4g%% (interval %.4g–%.4g%% from %s), which straddles the claimed %.4g%%: not enough rows to decide (sample more rows)", 100*m.RebuiltRelError, 100*rel[0], 100*rel[1], of(), 100*mx)
		}
	}
	if undecided {
		s.undecided++
	} else {
		s.decided++
	}
	if rep == nil {
		return
	}
	x, ok := rep.Find(m.Module)
	if !ok {
		return
	}
	// The report's exact figures must lie in the intervals (widened by the
	// summation-order tolerance the full rebuild allows).
	cmp := func(field string, iv *[2]float64, want *float64) {
		if want == nil {
			return
		}
		if lo, hi := iv[0]*(1-ReportTolerance), iv[1]*(1+ReportTolerance); *want < lo-1e-12 || *want > hi+1e-12 {
			c.Addf(report.ReportMismatch, report.Fail, m.Module, iv[:], *want, "%s is %.4g–%.4g here (from %s), the report says %.6g", field, iv[0], iv[1], of(), *want)
		}
	}
	cmp("residual_to_noise", ci, x.ResidualToNoise)
	cmp("rebuilt_rel_error", rel, x.RebuiltRelError)
}
