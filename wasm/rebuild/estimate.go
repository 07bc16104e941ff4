package rebuild

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Family is the simultaneous confidence of a sampled rebuild's intervals:
// all of them cover their true values together with probability at least
// Family (Bonferroni), so a genuine adapter fails or warns by chance in at
// most 1 − Family of runs. 99.9 %, not 95 %: at 95 % one run in twenty of
// a genuine adapter would fail it (an interval missing the report's exact
// figure is a FAIL), which a verifier must not do; the intervals are
// about a quarter wider for it (t at 1 − 0.0005/K instead of 1 − 0.025/K).
const Family = 0.999

// Estimator says in one line how a sampled rebuild estimates (see the
// package doc for the maths and why).
const Estimator = "rows uniformly without replacement (seeded, per module); figures² as ratios of sums over the sampled rows (Σ‖R_i‖²/Σ‖N_i‖², Σ‖R_i‖²/Σ‖T_i‖²); linearised variance with the finite-population correction; Student-t intervals on m−1 degrees of freedom, Bonferroni-adjusted to a simultaneous 99.9 %"

// chooseRows picks m of the n stored rows [0, n) uniformly without
// replacement (Floyd's algorithm), from a stream of its own for each
// module, so the choice depends on the seed and the module only; ascending.
func chooseRows(seed uint64, module string, n, m int) []int {
	out := make([]int, 0, min(m, n))
	if m >= n {
		for i := range n {
			out = append(out, i)
		}
		return out
	}
	h := fnv.New64a()
	h.Write([]byte(module))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	chosen := make(map[int]bool, m)
	for j := n - m; j < n; j++ {
		if t := rng.IntN(j + 1); chosen[t] {
			chosen[j] = true
		} else {
			chosen[t] = true
		}
	}
	for i := range chosen {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// freshSeed is a seed for a run that was given none: 53 bits, so that it
// survives JSON in a browser (a float64) unchanged; never 0.
func freshSeed() uint64 { return rand.Uint64()>>11 | 1 }

// tQuantile is Student's t quantile at p on df degrees of freedom.
func tQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

// ratio estimates Y/X = Σ_U y / Σ_U x over a population of n units from
// a sample of m = len(y) of them drawn uniformly without replacement, and
// gives an interval at two-sided level 1 − 2·(1 − p):
//
//	R̂  = Σ_S y / Σ_S x
//	e_i = y_i − R̂·x_i,  s² = Σ_S e_i² / (m − 1)
//	SE² = (1 − m/n) · s² / (m · x̄²),  x̄ = Σ_S x / m
//	[R̂·e^(−t·SE/R̂), R̂·e^(t·SE/R̂)],  t = t_{m−1}(p)
//
// (Cochran, Sampling Techniques, §6.3–6.4). With m = n the estimate is
// exact and the interval is the point. ok is false when Σ_S x is not
// positive (no ratio).
func ratio(y, x []float64, n int, p float64) (est, lo, hi float64, ok bool) {
	m := len(y)
	var sy, sx float64
	for i := range y {
		sy += y[i]
		sx += x[i]
	}
	if m == 0 || !(sx > 0) {
		return 0, 0, 0, false
	}
	est = sy / sx
	if m >= n || m < 2 {
		return est, est, est, true
	}
	var ss float64
	for i := range y {
		e := y[i] - est*x[i]
		ss += e * e
	}
	xbar := sx / float64(m)
	se := math.Sqrt((1-float64(m)/float64(n))*ss/float64(m-1)/float64(m)) / xbar
	// On the log scale (the delta method: SE(log R̂) = SE/R̂): R̂ is a
	// positive ratio whose sampling distribution is skewed to the right,
	// and the interval R̂·e^(±t·SE/R̂) is too (wider above).
	t := tQuantile(p, m-1)
	if !(est > 0) { // no residual in the sample (or not a number): the linear bound
		return est, est, est + t*se, true
	}
	return est, est * math.Exp(-t*se/est), est * math.Exp(t*se/est), true
}

// total estimates Σ_U y from the sample: n/m · Σ_S y.
func total(y []float64, n int) float64 {
	var s float64
	for _, v := range y {
		s += v
	}
	return s * float64(n) / float64(len(y))
}
