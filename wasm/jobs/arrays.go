package jobs

import (
	"errors"
	"math"
)

// The bulk of a deep audit's output is two arrays per matrix: its σ and
// the extraction report's (report.AuditMatrix.Sigma, ReportSigma), 95,000
// numbers for the real adapter's 186 pairs. The browser's engine worker
// sends them to the page beside the output's JSON, as one Float64Array
// (TakeArrays), and the page puts them back (PutArrays): on the full-size
// twin, writing them as text took the engine worker 64 ms and reading them
// the page 126 ms, between the audit's end and its verdict on screen.

// TakeArrays removes the audit's per-matrix arrays from o and returns
// them, two per matrix in order (σ, then the report's; nil where there is
// none), as the output's JSON would have carried them: a non-finite value
// as 0 (JSON's null, read into a number), an empty array as none.
func TakeArrays(o *Output) [][]float64 {
	if o.Audit == nil {
		return nil
	}
	ms := o.Audit.Matrices
	out := make([][]float64, 0, 2*len(ms))
	take := func(x *[]float64) {
		v := *x
		*x = nil
		if len(v) == 0 {
			out = append(out, nil)
			return
		}
		for i, f := range v {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				v = append([]float64(nil), v...) // not the caller's
				for j := i; j < len(v); j++ {
					if math.IsNaN(v[j]) || math.IsInf(v[j], 0) {
						v[j] = 0
					}
				}
				break
			}
		}
		out = append(out, v)
	}
	for i := range ms {
		take(&ms[i].Sigma)
		take(&ms[i].ReportSigma)
	}
	return out
}

// errArrays: arrays that are not two per matrix of an output without them
// (plain words, no fmt: the page links this, and app.wasm has a budget).
var errArrays = errors.New("the arrays do not fit the matrices (two for each, of an output without them)")

// PutArrays puts back what TakeArrays took (xs as it returned them, after
// the output's JSON was read). Arrays that do not fit the output's
// matrices are an error, and nothing is put back.
func PutArrays(o *Output, xs [][]float64) error {
	n := 0
	if o.Audit != nil {
		n = len(o.Audit.Matrices)
	}
	if len(xs) != 2*n {
		return errArrays
	}
	for i := 0; i < n; i++ {
		m := o.Audit.Matrices[i]
		if m.Sigma != nil || m.ReportSigma != nil {
			return errArrays
		}
	}
	for i := 0; i < n; i++ {
		m := o.Audit.Matrices[i]
		if len(xs[2*i]) > 0 {
			m.Sigma = xs[2*i]
		}
		if len(xs[2*i+1]) > 0 {
			m.ReportSigma = xs[2*i+1]
		}
	}
	return nil
}
