package spectral

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/kvit-s/clefcheck/wasm/kernels"
)

// Randomized check of the SVD form.
//
// With Da = diag(A·Aᵀ) and Fa = Da^-½·(A·Aᵀ − Da)·Da^-½ (the normalised
// off-diagonal part; likewise Db, Fb for Bᵀ·B), the factors are in SVD form
// when Fa and Fb vanish and Da = Db. Every entry of F is at most ‖F‖₂, and
// ‖F‖₂ is what the singular values need, so the probes bound ‖F‖₂.
//
// Let Z be r × k with independent N(0, 1) entries and v a unit eigenvector
// of the symmetric F with |λ| = ‖F‖₂. Then ‖F^q·Z‖_F ≥ ‖vᵀ·F^q·Z‖ =
// ‖F‖₂^q·‖vᵀZ‖, and ‖vᵀZ‖² is exactly χ²_k (vᵀZ is k independent N(0, 1)).
// So with t the δ-quantile of χ²_k,
//
//	B = (‖F^q·Z‖²_F / t)^(1/(2q)) ≥ ‖F‖₂  with probability at least 1 − δ,
//
// whatever F is. Each power of F is one pass over the factor's long side
// with 2·k multiply-adds per element, O(q·k·r·(m+n)) in all instead of the
// Gram's O(r²·(m+n)). The defaults, k = 4 probes, q = 4 powers and δ = 10⁻⁷
// per factor, cost 32 multiply-adds per factor element against the Gram's
// r/2 = 128 at r = 256. For a noise-like F (a genuine bf16 factorisation;
// its eigenvalues follow the semicircle law) B ≈ (k·C_q·r^(1−q)/t)^(1/2q)·‖F‖_F
// with C_q the Catalan number: ≈ 0.5·‖F‖_F for r = 256, where k = 8 and
// q = 2 at the same cost give 0.9·‖F‖_F (measured on the 1.40 GB twin:
// the bounds stay under the form tolerance with room).
//
// When B ≤ the form tolerance for both factors, the singular values follow
// without a Gram: with Ga = Da^½(I+Fa)Da^½, Ostrowski's theorem puts each
// eigenvalue of Gb^½·Ga·Gb^½ within the factors [1 − ‖Fa‖₂, 1 + ‖Fa‖₂] of
// those of Gb^½·Da·Gb^½, and again for Fb, so
//
//	σᵢ² ∈ [(1 − fa)(1 − fb), (1 + fa)(1 + fb)] · (i-th largest of s²·Daⱼ·Dbⱼ)
//
// with fa, fb ≤ the bounds B. SigmaBound is the resulting relative bound
// on σ.
//
// Products are accumulated in float32 over blocks of probeFlush rows of
// the long side and the blocks summed in float64.

// DefaultProbes is the number of Gaussian probes per factor (even).
const DefaultProbes = 4

// PowerSteps is q, the power of F the probes see.
const PowerSteps = 4

// ProbeDelta is δ, the probability that a factor's bound does not hold.
const ProbeDelta = 1e-7

// ProbeResult is the randomized check of one pair.
type ProbeResult struct {
	BoundA, BoundB float64   // upper bounds on ‖Fa‖₂, ‖Fb‖₂ (each with probability ≥ 1 − ProbeDelta)
	Diag           float64   // largest |Daᵢ − Dbᵢ| / max(Daᵢ, Dbᵢ), exact
	Sigma          []float64 // s·√(Daᵢ·Dbᵢ), descending: the singular values when the form holds
	SigmaBound     float64   // relative bound on each σᵢ when the form holds
	NormA, NormB   float64   // ‖A‖_F, ‖B‖_F
}

// Accepts reports whether the probes establish the SVD form within tol.
func (p ProbeResult) Accepts(tol float64) bool {
	return p.BoundA <= tol && p.BoundB <= tol && p.Diag <= tol
}

// probeFlush is how many rows of the long side one float32 block sums, and
// how often yield is called.
const probeFlush = 256

// Probe checks the SVD form of A (r × in) and B (out × r), both row-major
// float32, with k probes drawn from seed (0: DefaultProbes; made even).
// yield, when not nil, is called between blocks of the long side.
func Probe(a []float32, b []float32, r, in, out int, s float64, k int, seed uint64, yield func() error) ProbeResult {
	pk := ProbeKernels.Get()
	if k <= 0 {
		k = DefaultProbes
	}
	k += k % 2
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	da := make([]float64, r)
	if pk.RowSquares != nil {
		pk.RowSquares(a, r, in, da)
	} else {
		RowSquaresPortable(a, r, in, da)
	}
	db := colSquares(b, out, r)
	var res ProbeResult
	for i := 0; i < r; i++ {
		res.NormA += da[i]
		res.NormB += db[i]
		if m := max(da[i], db[i]); m > 0 {
			res.Diag = max(res.Diag, math.Abs(da[i]-db[i])/m)
		}
	}
	res.NormA, res.NormB = math.Sqrt(res.NormA), math.Sqrt(res.NormB)
	t := chi2Quantile(k, ProbeDelta)
	res.BoundA = powerBound(rng, da, k, t, func(w []float32, y []float64) { gramApplyCols(a, r, in, k, w, y, yield) })
	res.BoundB = powerBound(rng, db, k, t, func(w []float32, y []float64) { gramApply(b, out, r, k, w, y, yield) })
	res.Sigma = make([]float64, r)
	for i := 0; i < r; i++ {
		res.Sigma[i] = math.Abs(s) * math.Sqrt(da[i]*db[i])
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(res.Sigma)))
	fa, fb := res.BoundA, res.BoundB
	res.SigmaBound = math.Sqrt((1+fa)*(1+fb)) - 1
	if lo := 1 - math.Sqrt(math.Max(0, (1-fa)*(1-fb))); lo > res.SigmaBound {
		res.SigmaBound = lo
	}
	return res
}

// colSquares returns the squared norms of the columns of x (rows × r):
// float32 sums of probeFlush rows, added in float64.
func colSquares(x []float32, rows, r int) []float64 {
	pk := ProbeKernels.Get()
	d := make([]float64, r)
	acc := make([]float32, r)
	for i0 := 0; i0 < rows; i0 += probeFlush {
		clear(acc)
		end := min(rows, i0+probeFlush)
		if pk.ColSquares != nil {
			pk.ColSquares(x[i0*r:end*r], end-i0, r, acc)
		} else {
			ColSquaresPortable(x[i0*r:end*r], end-i0, r, acc)
		}
		for j, v := range acc {
			d[j] += float64(v)
		}
	}
	return d
}

// ColSquaresPortable adds the squares of the rows of x (rows × r) into acc.
func ColSquaresPortable(x []float32, rows, r int, acc []float32) {
	for i := 0; i < rows; i++ {
		row := x[i*r : i*r+r]
		for j, v := range row {
			acc[j] += v * v
		}
	}
}

// RowSquaresPortable sets out[i] to the squared norm of row i of a (r × n):
// float32 sums of probeFlush values, added in float64.
func RowSquaresPortable(a []float32, r, n int, out []float64) {
	for i := 0; i < r; i++ {
		row := a[i*n : i*n+n]
		var d float64
		for j0 := 0; j0 < n; j0 += probeFlush {
			var s float32
			for _, v := range row[j0:min(n, j0+probeFlush)] {
				s += v * v
			}
			d += float64(s)
		}
		out[i] = d
	}
}

// powerBound returns (‖F^q·Z‖²_F / t)^(1/(2q)) for F = D^-½(G − D)D^-½,
// where apply sets y (r × k, float64) = G·w. Rows with Dᵢ = 0 are left out
// of the probes (a zero row of the factor: its row and column of G are
// zero); if F·Z has mass there anyway, the bound is +Inf.
func powerBound(rng *rand.Rand, d []float64, k int, t float64, apply func(w []float32, y []float64)) float64 {
	r := len(d)
	inv := make([]float64, r)
	for i, v := range d {
		if v > 0 {
			inv[i] = 1 / math.Sqrt(v)
		}
	}
	z := make([]float64, r*k)
	for i := 0; i < r; i++ {
		if d[i] == 0 {
			continue
		}
		for j := 0; j < k; j++ {
			z[i*k+j] = rng.NormFloat64()
		}
	}
	w := make([]float32, r*k)
	y := make([]float64, r*k)
	for step := 0; step < PowerSteps; step++ {
		// w = D^-½·z; y = XᵀX·w; z ← D^-½·y − z = F·z.
		for i := 0; i < r; i++ {
			for j := 0; j < k; j++ {
				w[i*k+j] = float32(z[i*k+j] * inv[i])
			}
		}
		apply(w, y)
		for i := 0; i < r; i++ {
			for j := 0; j < k; j++ {
				if d[i] == 0 {
					if y[i*k+j] != 0 {
						return math.Inf(1)
					}
					continue
				}
				z[i*k+j] = y[i*k+j]*inv[i] - z[i*k+j]
			}
		}
	}
	var ss float64
	for _, v := range z {
		ss += v * v
	}
	return math.Pow(ss/t, 1/(2*float64(PowerSteps)))
}

// gramApply sets y (r × k, float64) = Xᵀ·(X·w) for X rows × r and w r × k:
// each row x of X gives u = x·w (k values) and adds x ⊗ u to y. The float32
// sums of probeFlush rows are added into y in float64.
func gramApply(x []float32, rows, r, k int, w []float32, y []float64, yield func() error) {
	pk := ProbeKernels.Get()
	clear(y)
	acc := make([]float32, r*k)
	u := make([]float32, 2*k)
	for i0 := 0; i0 < rows; i0 += probeFlush {
		clear(acc)
		end := min(rows, i0+probeFlush)
		i := i0
		if k == 4 && pk.Apply4 != nil && r > 0 {
			pk.Apply4(x[i0*r:end*r], end-i0, r, w, acc)
			i = end
		}
		if k == 4 {
			for ; i+1 < end; i += 2 {
				apply4x2(x[i*r:i*r+r], x[(i+1)*r:(i+1)*r+r], w, acc)
			}
		}
		for ; i < end; i++ {
			row := x[i*r : i*r+r]
			u := u[:k]
			clear(u)
			for c, xc := range row {
				wc := w[c*k : c*k+k]
				for j := range u {
					u[j] += xc * wc[j]
				}
			}
			for c, xc := range row {
				ac := acc[c*k : c*k+k]
				for j := range ac {
					ac[j] += xc * u[j]
				}
			}
		}
		for j, v := range acc {
			y[j] += float64(v)
		}
		if yield != nil {
			yield()
		}
	}
}

// Kernels are faster inner loops for the probes with k = 4 (the browser's
// audit workers install WebAssembly SIMD ones, after checking them against
// the portable functions of the same names). A nil field keeps the
// portable loop.
type Kernels struct {
	Name string
	// Apply4: acc (r × 4) += Σ over the rows x of X (rows × r) of x ⊗ (x·w).
	Apply4 func(x []float32, rows, r int, w, acc []float32)
	// Apply4Cols: for the columns [j0, j0+cols) of A (r × n), t (cols × 4)
	// = A_colsᵀ·w, then acc (r × 4) += A_cols·t. t is scratch: a kernel
	// may leave it in another layout.
	Apply4Cols func(a []float32, r, n, j0, cols int, w, t, acc []float32)
	// ColSquares: acc (r) += Σ over the rows x of X (rows × r) of x².
	ColSquares func(x []float32, rows, r int, acc []float32)
	// RowSquares: out[i] = ‖row i of A (r × n)‖², float32 sums of at most
	// probeFlush values added in float64.
	RowSquares func(a []float32, r, n int, out []float64)
}

// ProbeKernels is the slot of the probes' loops (package kernels). Its
// portable kernel is Kernels{Name: "go"}: every field nil, the built-in
// loops. A candidate is checked against ApplyPortable, ApplyColsPortable,
// ColSquaresPortable and RowSquaresPortable before it is installed.
var ProbeKernels = kernels.NewSlot[Kernels]("probes", Kernels{Name: kernels.Portable})

// ProbeKernel names the probes' loops in use.
//
// Deprecated: use ProbeKernels.Name().
func ProbeKernel() string { return ProbeKernels.Name() }

// ApplyPortable is the portable Kernels.Apply4, one row at a time: the
// reference an installed kernel is checked against.
func ApplyPortable(x []float32, rows, r int, w, acc []float32) {
	u := make([]float32, 4)
	for i := 0; i < rows; i++ {
		row := x[i*r : i*r+r]
		clear(u)
		for c, xc := range row {
			wc := w[c*4 : c*4+4]
			for j := range u {
				u[j] += xc * wc[j]
			}
		}
		for c, xc := range row {
			ac := acc[c*4 : c*4+4]
			for j := range ac {
				ac[j] += xc * u[j]
			}
		}
	}
}

// gramApplyCols sets y (r × k, float64) = A·(Aᵀ·w) for A r × n, by blocks
// of probeFlush columns: t = A_blockᵀ·w, then A_block·t, summed in float32
// and added into y in float64 (as gramApply does for the rows of X = Aᵀ,
// without transposing A).
func gramApplyCols(a []float32, r, n, k int, w []float32, y []float64, yield func() error) {
	pk := ProbeKernels.Get()
	clear(y)
	acc := make([]float32, r*k)
	t := make([]float32, probeFlush*k)
	for j0 := 0; j0 < n; j0 += probeFlush {
		cols := min(probeFlush, n-j0)
		clear(acc)
		if k == 4 && pk.Apply4Cols != nil && r > 0 {
			pk.Apply4Cols(a, r, n, j0, cols, w, t, acc)
		} else {
			ApplyColsPortable(a, r, n, j0, cols, k, w, t, acc)
		}
		for j, v := range acc {
			y[j] += float64(v)
		}
		if yield != nil {
			yield()
		}
	}
}

// ApplyColsPortable is Kernels.Apply4Cols for any k: t (cols × k) =
// A_colsᵀ·w, then acc (r × k) += A_cols·t.
func ApplyColsPortable(a []float32, r, n, j0, cols, k int, w, t, acc []float32) {
	t = t[:cols*k]
	clear(t)
	for i := 0; i < r; i++ {
		row := a[i*n+j0 : i*n+j0+cols]
		wi := w[i*k : i*k+k]
		for j, v := range row {
			tj := t[j*k : j*k+k]
			for c := range tj {
				tj[c] += v * wi[c]
			}
		}
	}
	for i := 0; i < r; i++ {
		row := a[i*n+j0 : i*n+j0+cols]
		ai := acc[i*k : i*k+k]
		for j, v := range row {
			tj := t[j*k : j*k+k]
			for c := range ai {
				ai[c] += v * tj[c]
			}
		}
	}
}

// apply4x2 adds x1 ⊗ (x1·w) + x2 ⊗ (x2·w) to acc for k = 4, with the
// eight dot products in locals (Go's wasm has no SIMD: this is the hot
// loop of the browser's randomized audit; other k take the plain loop).
func apply4x2(x1, x2 []float32, w, acc []float32) {
	var a0, a1, a2, a3, b0, b1, b2, b3 float32
	x2 = x2[:len(x1)]
	for c, p := range x1 {
		q := x2[c]
		wc := (*[4]float32)(w[c*4:])
		a0 += p * wc[0]
		a1 += p * wc[1]
		a2 += p * wc[2]
		a3 += p * wc[3]
		b0 += q * wc[0]
		b1 += q * wc[1]
		b2 += q * wc[2]
		b3 += q * wc[3]
	}
	for c, p := range x1 {
		q := x2[c]
		ac := (*[4]float32)(acc[c*4:])
		ac[0] += p*a0 + q*b0
		ac[1] += p*a1 + q*b1
		ac[2] += p*a2 + q*b2
		ac[3] += p*a3 + q*b3
	}
}

// chi2Quantile returns t with P(χ²_k ≤ t) = delta, for even k, by
// bisection on P(χ²_k ≤ t) = P(Poisson(t/2) ≥ k/2), summed as a tail
// series (no cancellation for small t).
func chi2Quantile(k int, delta float64) float64 {
	cdf := func(t float64) float64 {
		x := t / 2
		term := math.Exp(-x)
		for j := 1; j <= k/2; j++ {
			term *= x / float64(j)
		}
		sum := 0.0
		for j := k / 2; term > 1e-300 && j < k/2+1000; j++ {
			sum += term
			term *= x / float64(j+1)
			if term < sum*1e-17 {
				break
			}
		}
		return sum
	}
	lo, hi := 0.0, float64(k)
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if cdf(mid) < delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
