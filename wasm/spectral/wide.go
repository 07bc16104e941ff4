package spectral

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// # Factors too large for the float32 Gram
//
// The kernels sum products in float32, which overflows once a product or
// a panel's sum passes 3.4·10³⁸: a factor with values of 1.8·10¹⁹ or more
// (finite in bf16, whose range is float32's) gives a Gram with infinite
// entries, and the trace FeedRows and FeedColumns return is +Inf. No
// finite input makes the float64 trace infinite otherwise, so that is the
// sign; the audit then feeds the factor again through AddWide, in
// float64 (gonum's dsyrk), where a bf16 factor's Gram cannot overflow
// (a product is at most 1.2·10⁷⁷). It is the slow route — gonum's
// portable dsyrk, about fifty times slower than the float32 kernels —
// taken only for such factors (dtype.Wide: also one whose values are all
// so small that their squares are subnormal in float32), and only up to
// MaxWideWork.

// AddWide adds the Gram of a block x (rows × cols, row-major float64) into
// g, in float64: x·xᵀ when columns is true (x holds a strip of columns of
// X·Xᵀ's X, so g.N must be rows), xᵀ·x otherwise (a run of rows of
// Xᵀ·X's X, g.N = cols).
func (g *Gram) AddWide(x []float64, rows, cols int, columns bool) {
	g.Flush()
	n, t := cols, blas.Trans
	if columns {
		n, t = rows, blas.NoTrans
	}
	if n != g.N {
		panic("spectral: AddWide: block does not fit the Gram")
	}
	if rows == 0 || cols == 0 {
		return
	}
	a := blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: x[:rows*cols]}
	c := blas64.Symmetric{N: g.N, Stride: g.stride, Data: g.g[:(g.N-1)*g.stride+g.N], Uplo: blas.Upper}
	blas64.Syrk(t, 1, a, 1, c)
}

// Trace is the Gram's trace, ‖X‖²_F of what was fed.
func (g *Gram) Trace() float64 {
	s := 0.0
	for i := 0; i < g.N; i++ {
		s += g.Diag(i)
	}
	return s
}
