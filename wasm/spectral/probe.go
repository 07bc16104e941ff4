package spectral

import (
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Randomized check of the SVD form.
//
// With Da = diag(A·Aᵀ) and Fa = Da^-½·(A·Aᵀ − Da)·Da^-½ (the normalised
// off-diagonal part; likewise Db, Fb for Bᵀ·B), the factors are in SVD form
// when Fa and Fb vanish and Da = Db. For z ~ N(0, I), E‖Fa·z‖² = ‖Fa‖²_F,
// so k Gaussian probes estimate ‖Fa‖_F from A·(Aᵀ·w), w = Da^-½·z, in
// O(k·r·(m+n)) instead of the Gram's O(r²·(m+n)). For any symmetric F the
// estimate ‖F·Z‖²_F/k is, in the worst case (F of rank one), ‖F‖²_F·χ²_k/k,
// so by the Chernoff bound P(‖F‖_F > 2·estimate) = P(χ²_k < k/4) ≤
// exp(−k·(ln 4 − 3/4)/2): with the default 48 probes, below 2.5·10⁻⁷ per
// factor. The bound used is therefore B = 2·√(‖F·Z‖²_F/k).
//
// When B ≤ the form tolerance for both factors, the singular values follow
// without a Gram: with Ga = Da^½(I+Fa)Da^½, Ostrowski's theorem puts each
// eigenvalue of Gb^½·Ga·Gb^½ within the factors [1 − ‖Fa‖₂, 1 + ‖Fa‖₂] of
// those of Gb^½·Da·Gb^½, and again for Fb, so
//
//	σᵢ² ∈ [(1 − fa)(1 − fb), (1 + fa)(1 + fb)] · (i-th largest of s²·Daⱼ·Dbⱼ)
//
// with fa, fb ≤ the bounds B (‖F‖₂ ≤ ‖F‖_F). SigmaBound is the resulting
// relative bound on σ.

// DefaultProbes is the number of Gaussian probes per factor.
const DefaultProbes = 48

// ProbeResult is the randomized check of one pair.
type ProbeResult struct {
	BoundA, BoundB float64   // upper bounds on ‖Fa‖_F, ‖Fb‖_F (with probability ≥ 1 − 2.5e-7 each)
	Diag           float64   // largest |Daᵢ − Dbᵢ| / max(Daᵢ, Dbᵢ), exact
	Sigma          []float64 // s·√(Daᵢ·Dbᵢ), descending: the singular values when the form holds
	SigmaBound     float64   // relative bound on each σᵢ when the form holds
	NormA, NormB   float64   // ‖A‖_F, ‖B‖_F
}

// Accepts reports whether the probes establish the SVD form within tol.
func (p ProbeResult) Accepts(tol float64) bool {
	return p.BoundA <= tol && p.BoundB <= tol && p.Diag <= tol
}

// probeChunk is how many columns of A (rows of B) one product step takes
// before yield is called.
const probeChunk = 1024

// Probe checks the SVD form of A (r × in) and B (out × r), row-major
// float32, with k probes drawn from seed. yield, when not nil, is called
// between chunks of the products (the browser stays responsive).
func Probe(a []float32, b []float32, r, in, out int, s float64, k int, seed uint64, yield func() error) ProbeResult {
	if k <= 0 {
		k = DefaultProbes
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	da := make([]float64, r)
	db := make([]float64, r)
	for i := 0; i < r; i++ {
		var ss float64
		for _, v := range a[i*in : (i+1)*in] {
			ss += float64(v) * float64(v)
		}
		da[i] = ss
	}
	for i := 0; i < out; i++ {
		row := b[i*r : (i+1)*r]
		for j, v := range row {
			db[j] += float64(v) * float64(v)
		}
	}
	var res ProbeResult
	for i := 0; i < r; i++ {
		res.NormA += da[i]
		res.NormB += db[i]
		if m := max(da[i], db[i]); m > 0 {
			res.Diag = max(res.Diag, math.Abs(da[i]-db[i])/m)
		}
	}
	res.NormA, res.NormB = math.Sqrt(res.NormA), math.Sqrt(res.NormB)
	step := func() {
		if yield != nil {
			yield()
		}
	}
	res.BoundA = probeBound(rng, da, k, func(w, y blas32.General) {
		// y = A·(Aᵀ·w) = Σ over column blocks A_c·(A_cᵀ·w), A r × in.
		t := blas32.General{Rows: probeChunk, Cols: k, Stride: k, Data: make([]float32, probeChunk*k)}
		for c0 := 0; c0 < in; c0 += probeChunk {
			n := min(probeChunk, in-c0)
			Ac := blas32.General{Rows: r, Cols: n, Stride: in, Data: a[c0:]}
			tc := blas32.General{Rows: n, Cols: k, Stride: k, Data: t.Data[:n*k]}
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, Ac, w, 0, tc)
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, Ac, tc, 1, y)
			step()
		}
	})
	res.BoundB = probeBound(rng, db, k, func(w, y blas32.General) {
		// y = Bᵀ·(B·w) = Σ over row blocks B_cᵀ·(B_c·w), B out × r.
		t := blas32.General{Rows: probeChunk, Cols: k, Stride: k, Data: make([]float32, probeChunk*k)}
		for i0 := 0; i0 < out; i0 += probeChunk {
			n := min(probeChunk, out-i0)
			Bc := blas32.General{Rows: n, Cols: r, Stride: r, Data: b[i0*r : (i0+n)*r]}
			tc := blas32.General{Rows: n, Cols: k, Stride: k, Data: t.Data[:n*k]}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, Bc, w, 0, tc)
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, Bc, tc, 1, y)
			step()
		}
	})
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

// probeBound returns 2·√(‖F·Z‖²_F/k) for F = D^-½(G − D)D^-½, where apply
// computes y = G·w. Rows with Dᵢ = 0 are left out of the probes (a zero
// row of the factor: its row and column of G are zero).
func probeBound(rng *rand.Rand, d []float64, k int, apply func(w, y blas32.General)) float64 {
	r := len(d)
	w := blas32.General{Rows: r, Cols: k, Stride: k, Data: make([]float32, r*k)}
	z := make([]float64, r*k)
	for i := 0; i < r; i++ {
		if d[i] == 0 {
			continue
		}
		inv := 1 / math.Sqrt(d[i])
		for j := 0; j < k; j++ {
			z[i*k+j] = rng.NormFloat64()
			w.Data[i*k+j] = float32(z[i*k+j] * inv)
		}
	}
	y := blas32.General{Rows: r, Cols: k, Stride: k, Data: make([]float32, r*k)}
	apply(w, y)
	var ss float64
	for i := 0; i < r; i++ {
		if d[i] == 0 {
			// A zero row must stay zero: anything else is off-diagonal mass.
			for j := 0; j < k; j++ {
				if y.Data[i*k+j] != 0 {
					return math.Inf(1)
				}
			}
			continue
		}
		inv := 1 / math.Sqrt(d[i])
		for j := 0; j < k; j++ {
			// (G·w − D·w)ᵢ normalised: the off-diagonal part of F·z.
			v := (float64(y.Data[i*k+j]) - d[i]*float64(w.Data[i*k+j])) * inv
			ss += v * v
		}
	}
	return 2 * math.Sqrt(ss/float64(k))
}
