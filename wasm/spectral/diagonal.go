package spectral

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"
)

// The diagonal shortcut of the exact route.
//
// For a factorisation in SVD form both Grams are diagonal, and the
// eigensolver (SingularValues) is not needed to know the spectrum. Write
// Ga = Da^½·(I + Fa)·Da^½ with Da = diag(Ga) and Fa the normalised
// off-diagonal part, Fa_ij = Ga_ij/√(Ga_ii·Ga_jj) for i ≠ j, likewise Gb.
// Gershgorin's theorem on the symmetric Fa (zero diagonal) puts every
// eigenvalue of Fa in [−ρa, ρa], ρa = maxᵢ Σ_{j≠i} |Fa_ij|, so I + Fa has
// its eigenvalues in [1 − ρa, 1 + ρa]. The non-zero σᵢ²/s² are the
// eigenvalues of Gb^½·Ga·Gb^½ = X·(I + Fa)·Xᵀ with X = Gb^½·Da^½, and
// Ostrowski's theorem gives λᵢ(X·M·Xᵀ) = θᵢ·λᵢ(X·Xᵀ) with θᵢ between the
// extreme eigenvalues of M; X·Xᵀ has the eigenvalues of Da^½·Gb·Da^½ =
// Y·(I + Fb)·Yᵀ, Y = (Da·Db)^½ diagonal, and Ostrowski again. So, sorting
// both sides in descending order,
//
//	σᵢ² ∈ [(1 − ρa)(1 − ρb), (1 + ρa)(1 + ρb)] · s²·(i-th largest Daⱼ·Dbⱼ)
//
// — a bound on each σᵢ against the eigenvalues of the same Gram matrices
// the eigensolver would take (their own float32 panel rounding, at most
// 64·2⁻²⁴ of √(Gᵢᵢ·Gⱼⱼ) per entry, is common to both routes; see the
// package documentation). With σ̃ᵢ = |s|·√(Daⱼ·Dbⱼ) sorted, the relative
// bound is Bound = max(√((1+ρa)(1+ρb)) − 1, 1 − √((1−ρa)(1−ρb))) ≈ (ρa+ρb)/2.
//
// The exact route takes σ̃ only when Bound ≤ DiagonalTolerance; otherwise
// (a rotated pair, a trained LoRA, factors not in SVD form) it runs the
// eigensolver. ‖s·B·A‖_F needs no bound: it is |s|·√trace(Ga·Gb), computed
// from the Grams' entries (DiagonalSpectrum.Fro).

// DiagonalTolerance is the largest relative bound on the σᵢ for which the
// exact route reports the diagonal spectrum instead of the eigensolver's:
// 2⁻⁸, the precision of a bf16 value (8 significant bits). Rounding the
// factors to bf16 already moves each σᵢ by up to about that much, and it
// is a quarter of the audit's tolerance against the report (SigmaRel 2⁻⁶).
// On the 1.40 GB twin ρ is 1–3·10⁻³ per factor (Bound ≈ 2·10⁻³).
const DiagonalTolerance = 1.0 / 256

// Diagonal is the spectrum of s·B·A read from the diagonals of its Grams.
type Diagonal struct {
	Sigma      []float64 // |s|·√(Gaᵢᵢ·Gbᵢᵢ), descending
	RowA, RowB float64   // ρa, ρb: Gershgorin bounds on ‖Fa‖₂, ‖Fb‖₂
	Bound      float64   // each σᵢ of the eigensolver is within Bound·σ̃ᵢ of Sigma[i]
	Fro        float64   // ‖s·B·A‖_F = |s|·√trace(Ga·Gb), no bound needed
}

// Accepts reports whether the diagonal spectrum is as good as the
// eigensolver's for the audit (Bound ≤ tol).
func (d Diagonal) Accepts(tol float64) bool { return d.Bound <= tol }

// DiagonalSpectrum reads the spectrum of s·B·A from the diagonals of
// ga = A·Aᵀ and gb = Bᵀ·B with the bound above. ok is false when the bound
// does not exist: a non-zero off-diagonal entry against a zero diagonal
// one, ρ ≥ 1, or values that are not finite.
func DiagonalSpectrum(ga, gb *mat.SymDense, s float64) (d Diagonal, ok bool) {
	r := ga.SymmetricDim()
	if gb.SymmetricDim() != r {
		return d, false
	}
	var okA, okB bool
	d.RowA, okA = gershgorin(ga)
	d.RowB, okB = gershgorin(gb)
	if !okA || !okB || d.RowA >= 1 || d.RowB >= 1 {
		return d, false
	}
	a, b := ga.RawSymmetric(), gb.RawSymmetric()
	d.Sigma = make([]float64, r)
	tr := 0.0
	for i := 0; i < r; i++ {
		x, y := a.Data[i*a.Stride+i], b.Data[i*b.Stride+i]
		d.Sigma[i] = math.Abs(s) * sqrtPos(x*y)
		tr += x * y
		for j := i + 1; j < r; j++ {
			tr += 2 * a.Data[i*a.Stride+j] * b.Data[i*b.Stride+j]
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(d.Sigma)))
	d.Fro = math.Abs(s) * sqrtPos(tr)
	fa, fb := d.RowA, d.RowB
	d.Bound = max(math.Sqrt((1+fa)*(1+fb))-1, 1-math.Sqrt((1-fa)*(1-fb)))
	if math.IsNaN(d.Bound) || math.IsInf(d.Fro, 0) || math.IsNaN(d.Fro) {
		return d, false
	}
	return d, true
}

// gershgorin returns maxᵢ Σ_{j≠i} |Gᵢⱼ|/√(Gᵢᵢ·Gⱼⱼ) over the upper
// triangle of g; ok is false when a non-zero entry meets a zero (or
// negative) diagonal entry, or an entry is not finite. A row that is zero
// off the diagonal (a zero row of A or column of B) adds nothing.
func gershgorin(g *mat.SymDense) (rho float64, ok bool) {
	raw := g.RawSymmetric()
	r, st, data := raw.N, raw.Stride, raw.Data
	inv := make([]float64, r) // 1/√Gᵢᵢ, 0 for a zero diagonal entry
	for i := 0; i < r; i++ {
		x := data[i*st+i]
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return 0, false
		}
		if x > 0 {
			inv[i] = 1 / math.Sqrt(x)
		}
	}
	rows := make([]float64, r)
	for i := 0; i < r; i++ {
		row := data[i*st : i*st+r]
		for j := i + 1; j < r; j++ {
			x := math.Abs(row[j])
			if x == 0 {
				continue
			}
			if inv[i] == 0 || inv[j] == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
				return 0, false
			}
			f := x * inv[i] * inv[j]
			rows[i] += f
			rows[j] += f
		}
	}
	for _, x := range rows {
		rho = max(rho, x)
	}
	return rho, true
}
