package spectral

import (
	"errors"
	"math"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// FormTolerance is the largest form deviation of a factorisation in SVD form
// (see the package documentation).
const FormTolerance = 1.0 / 64

// Float32Eps is NumPy's finfo(float32).eps, 2⁻²³, used for the rank threshold.
const Float32Eps = 1.0 / (1 << 23)

// SingularValues returns the singular values of s·B·A, descending, from
// ga = A·Aᵀ and gb = Bᵀ·B (both r × r). There are r of them; those beyond
// the product's rank are zero (or at rounding level).
//
// Ga is factored by Cholesky with complete pivoting, Pᵀ·Ga·P = Uᵀ·U with U
// of rank k (pivots below r·ε·max Gaᵢᵢ end it), so C = U·Pᵀ has CᵀC = Ga and
// the σᵢ²/s² are the eigenvalues of U·(Pᵀ·Gb·P)·Uᵀ, a k × k symmetric matrix.
// Only eigenvalues are computed: O(r³) with small constants, no eigenvectors.
func SingularValues(ga, gb *mat.SymDense, s float64) ([]float64, error) {
	r := ga.SymmetricDim()
	if gb.SymmetricDim() != r {
		return nil, errors.New("spectral: Gram sizes differ")
	}
	out := make([]float64, r)
	if r == 0 {
		return out, nil
	}
	// Pivoted Cholesky of a copy of Ga (upper triangle).
	u := make([]float64, r*r)
	for i := 0; i < r; i++ {
		for j := i; j < r; j++ {
			u[i*r+j] = ga.At(i, j)
		}
	}
	piv := make([]int, r)
	work := make([]float64, 2*r)
	_, k, _ := lapack64.Pstrf(blas64.Symmetric{N: r, Stride: r, Data: u, Uplo: blas.Upper}, piv, -1, work)
	if k == 0 {
		return out, nil // A is zero
	}
	// U_k: the first k rows of U, upper trapezoidal (clear the lower part).
	uk := blas64.General{Rows: k, Cols: r, Stride: r, Data: u[:k*r]}
	for i := 0; i < k; i++ {
		for j := 0; j < i; j++ {
			uk.Data[i*r+j] = 0
		}
	}
	// Gp = Pᵀ·Gb·P.
	gp := blas64.General{Rows: r, Cols: r, Stride: r, Data: make([]float64, r*r)}
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			gp.Data[i*r+j] = gb.At(piv[i], piv[j])
		}
	}
	// M = U_k·Gp·U_kᵀ: triangular products when U is square (full rank),
	// half the work of general ones.
	var m blas64.General
	if k == r {
		ut := blas64.Triangular{N: r, Stride: r, Data: uk.Data, Uplo: blas.Upper, Diag: blas.NonUnit}
		blas64.Trmm(blas.Left, blas.NoTrans, 1, ut, gp) // gp ← U·Gp
		blas64.Trmm(blas.Right, blas.Trans, 1, ut, gp)  // gp ← U·Gp·Uᵀ
		m = gp
	} else {
		t := blas64.General{Rows: k, Cols: r, Stride: r, Data: make([]float64, k*r)}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, uk, gp, 0, t)
		m = blas64.General{Rows: k, Cols: k, Stride: k, Data: make([]float64, k*k)}
		blas64.Gemm(blas.NoTrans, blas.Trans, 1, t, uk, 0, m)
	}
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			m.Data[i*k+j] = 0.5 * (m.Data[i*k+j] + m.Data[j*k+i])
		}
	}
	w := make([]float64, k)
	lwork := -1
	q := make([]float64, 1)
	sym := blas64.Symmetric{N: k, Stride: k, Data: m.Data, Uplo: blas.Upper}
	lapack64.Syev(lapack.EVNone, sym, w, q, lwork)
	lwork = int(q[0])
	if !lapack64.Syev(lapack.EVNone, sym, w, make([]float64, lwork), lwork) {
		return nil, errors.New("spectral: eigenvalues of U·Gb·Uᵀ did not converge")
	}
	for i, x := range w {
		out[i] = math.Abs(s) * sqrtPos(x)
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(out)))
	return out, nil
}

// GramFloor is the smallest σᵢ/σ₁ the Gram route resolves: Gram entries
// carry relative errors up to ~10⁻⁶, so σᵢ² below that fraction of σ₁² —
// σᵢ below ~10⁻³·σ₁ — is rounding. 2⁻¹⁰ ≈ 9.8·10⁻⁴.
const GramFloor = 1.0 / 1024

// RankTolerance is the threshold below which a singular value counts as
// zero: NumPy's matrix_rank threshold for float32 data, σ₁·max(out,in)·2⁻²³,
// but never below the Gram floor σ₁·2⁻¹⁰.
func RankTolerance(sigma []float64, out, in int) float64 {
	if len(sigma) == 0 {
		return 0
	}
	return sigma[0] * max(float64(max(out, in))*Float32Eps, GramFloor)
}

// NumericalRank counts singular values above RankTolerance; it never exceeds
// min(len(sigma), out, in), the product's rank by construction.
func NumericalRank(sigma []float64, out, in int) int {
	if len(sigma) == 0 || sigma[0] == 0 {
		return 0
	}
	tol := RankTolerance(sigma, out, in)
	n := 0
	for _, x := range sigma {
		if x > tol {
			n++
		}
	}
	return min(n, out, in)
}

// Form measures how far the factors are from SVD form.
type Form struct {
	OffA, OffB float64 // largest |Gᵢⱼ|/√(Gᵢᵢ·Gⱼⱼ), i ≠ j
	Diag       float64 // largest |Gaᵢᵢ − Gbᵢᵢ| / max(Gaᵢᵢ, Gbᵢᵢ)
}

// Deviation is the largest of the three measures.
func (f Form) Deviation() float64 { return max(f.OffA, f.OffB, f.Diag) }

// FormOf measures the SVD form of a pair from its Grams.
func FormOf(ga, gb *mat.SymDense) Form {
	var f Form
	r := ga.SymmetricDim()
	off := func(g *mat.SymDense) float64 {
		worst := 0.0
		for i := 0; i < r; i++ {
			gii := g.At(i, i)
			for j := i + 1; j < r; j++ {
				gjj := g.At(j, j)
				x := math.Abs(g.At(i, j))
				if x == 0 {
					continue
				}
				if gii <= 0 || gjj <= 0 {
					return math.Inf(1) // a non-zero product against a zero row
				}
				worst = max(worst, x/math.Sqrt(gii*gjj))
			}
		}
		return worst
	}
	f.OffA, f.OffB = off(ga), off(gb)
	for i := 0; i < r; i++ {
		a, b := ga.At(i, i), gb.At(i, i)
		if m := max(a, b); m > 0 {
			f.Diag = max(f.Diag, math.Abs(a-b)/m)
		}
	}
	return f
}

// FroFromSigma is √Σσᵢ², the Frobenius norm of the product.
func FroFromSigma(sigma []float64) float64 {
	s := 0.0
	for _, x := range sigma {
		s += x * x
	}
	return math.Sqrt(s)
}
