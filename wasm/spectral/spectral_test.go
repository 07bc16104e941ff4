package spectral

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/world"
)

func randBF16(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = dtype.RoundBF16(float32(rng.NormFloat64() * scale))
	}
	return x
}

// naiveGram is the reference: float64 sums of float64 products.
func naiveGram(x []float32, rows, cols int, ofRows bool) []float64 {
	n := cols
	if ofRows {
		n = rows
	}
	g := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			if ofRows {
				for k := 0; k < cols; k++ {
					s += float64(x[i*cols+k]) * float64(x[j*cols+k])
				}
			} else {
				for k := 0; k < rows; k++ {
					s += float64(x[k*cols+i]) * float64(x[k*cols+j])
				}
			}
			g[i*n+j] = s
		}
	}
	return g
}

func TestGramAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sz := range [][2]int{{1, 1}, {3, 70}, {16, 64}, {17, 129}, {40, 33}, {256, 300}} {
		rows, cols := sz[0], sz[1]
		x := randBF16(rng, rows*cols, 0.05)
		for _, ofRows := range []bool{true, false} {
			var g *mat.SymDense
			if ofRows {
				g = GramOfRows(x, rows, cols)
			} else {
				g = GramOfCols(x, rows, cols)
			}
			want := naiveGram(x, rows, cols, ofRows)
			n := g.SymmetricDim()
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					w := want[i*n+j]
					// float32 sums of ≤ 64 exact products: relative 64·2⁻²⁴ of the
					// sum of magnitudes, bounded here by √(Gii·Gjj).
					tol := 64.0 / (1 << 24) * math.Sqrt(want[i*n+i]*want[j*n+j])
					if d := math.Abs(g.At(i, j) - w); d > tol+1e-30 {
						t.Fatalf("%v rows=%v (%d,%d): %g vs %g (tol %g) kernel %s", sz, ofRows, i, j, g.At(i, j), w, tol, Kernel())
					}
				}
			}
		}
	}
}

// TestSingularValuesAgainstSVD checks the Gram route against gonum's SVD of
// the explicit product, an independent computation.
func TestSingularValuesAgainstSVD(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ r, out, in int }{{8, 40, 50}, {16, 6, 64}, {16, 192, 64}, {32, 100, 90}} {
		a := randBF16(rng, c.r*c.in, 0.1)
		b := randBF16(rng, c.out*c.r, 0.1)
		s := 2.0
		got, err := SingularValues(GramOfRows(a, c.r, c.in), GramOfCols(b, c.out, c.r), s)
		if err != nil {
			t.Fatal(err)
		}
		A := mat.NewDense(c.r, c.in, f64(a))
		B := mat.NewDense(c.out, c.r, f64(b))
		var P mat.Dense
		P.Mul(B, A)
		P.Scale(s, &P)
		var svd mat.SVD
		if !svd.Factorize(&P, mat.SVDNone) {
			t.Fatal("svd")
		}
		want := svd.Values(nil)
		for i := 0; i < c.r; i++ {
			w := 0.0
			if i < len(want) {
				w = want[i]
			}
			// Values resolved by the Grams: relative 1e-4 of σ₁ is far above
			// float64 rounding and far below a bf16 step.
			if math.Abs(got[i]-w) > 1e-4*want[0] {
				t.Fatalf("%+v σ%d = %g, svd %g", c, i, got[i], w)
			}
		}
		rank := NumericalRank(got, c.out, c.in)
		if want := min(c.r, c.out, c.in); rank != want {
			t.Errorf("%+v rank %d, want %d", c, rank, want)
		}
	}
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// svdForm returns bf16 factors in SVD form for a random rank-r matrix,
// extracted as the model card's step 2 does (world.Extract).
func svdForm(rng *rand.Rand, r, out, in int) (a, b []float32) {
	D := mat.NewDense(out, in, nil)
	for k := 0; k < r; k++ {
		u := make([]float64, out)
		v := make([]float64, in)
		for i := range u {
			u[i] = rng.NormFloat64()
		}
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		var o mat.Dense
		o.Outer(math.Pow(0.8, float64(k)), mat.NewVecDense(out, u), mat.NewVecDense(in, v))
		D.Add(D, &o)
	}
	tuned := make([]float32, out*in)
	for i := 0; i < out; i++ {
		for j := 0; j < in; j++ {
			tuned[i*in+j] = float32(D.At(i, j))
		}
	}
	a, b, _ = world.Extract(make([]float32, out*in), tuned, out, in, r)
	return a, b
}

func TestForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := svdForm(rng, 16, 192, 64)
	f := FormOf(GramOfRows(a, 16, 64), GramOfCols(b, 192, 16))
	if f.Deviation() > FormTolerance/4 {
		t.Errorf("genuine SVD form scores %+v", f)
	}
	// Zero-padded where a side is below r: still in form.
	a, b = svdForm(rng, 16, 6, 64)
	if f := FormOf(GramOfRows(a, 16, 64), GramOfCols(b, 6, 16)); f.Deviation() > FormTolerance/4 {
		t.Errorf("padded SVD form scores %+v", f)
	}
	// Random factors (a trained LoRA) are not in SVD form.
	ra, rb := randBF16(rng, 16*64, 0.1), randBF16(rng, 192*16, 0.1)
	if f := FormOf(GramOfRows(ra, 16, 64), GramOfCols(rb, 192, 16)); f.Deviation() < 4*FormTolerance {
		t.Errorf("random factors score only %+v", f)
	}
	// Moving the scale between the factors breaks the equal diagonals.
	for i := range a {
		a[i] *= 1.1
	}
	for i := range b {
		b[i] /= 1.1
	}
	if f := FormOf(GramOfRows(a, 16, 64), GramOfCols(b, 6, 16)); f.Diag < 0.1 {
		t.Errorf("rescaled factors: %+v", f)
	}
}

func TestRankDeficient(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := svdForm(rng, 16, 192, 64)
	for j := 0; j < 64; j++ {
		a[5*64+j] = 0 // drop one direction
	}
	sigma, err := SingularValues(GramOfRows(a, 16, 64), GramOfCols(b, 192, 16), 1)
	if err != nil {
		t.Fatal(err)
	}
	if r := NumericalRank(sigma, 192, 64); r != 15 {
		t.Errorf("rank = %d, want 15 (σ = %v)", r, sigma)
	}
}

func ExampleSingularValues() {
	// B·A = [[2,0],[0,1]]·[[3,0,0],[0,1,0]] has singular values 6 and 1.
	a := []float32{3, 0, 0, 0, 1, 0}
	b := []float32{2, 0, 0, 1}
	sigma, _ := SingularValues(GramOfRows(a, 2, 3), GramOfCols(b, 2, 2), 1)
	fmt.Printf("%.6f %.6f\n", sigma[0], sigma[1])
	// Output: 6.000000 1.000000
}

// TestKernelsAgree compares every Gram kernel built in (the AVX2 one under
// GOEXPERIMENT=simd on amd64) with the portable one on the same panels. It
// skips when the portable kernel is the only one: then nothing is compared.
func TestKernelsAgree(t *testing.T) {
	cands := GramKernels.Candidates()
	if len(cands) == 0 {
		t.Skipf("only the portable Gram kernel is built here (kernels %v); build with GOEXPERIMENT=simd on amd64 with AVX2 for another", GramKernels.Names())
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range cands {
		for _, n := range []int{16, 48, 256} {
			stride := n
			p := randBF16(rng, PanelRows*stride, 0.02)
			for _, k := range []int{1, 7, PanelRows} {
				g1 := make([]float64, stride*stride)
				g2 := make([]float64, stride*stride)
				pk := Pack(p, k, stride)
				c.Fn(pk, k, stride, g1)
				syrkPanelGo(pk, k, stride, g2)
				for i := 0; i < n; i++ {
					for j := i; j < n; j++ {
						a, b := g1[i*stride+j], g2[i*stride+j]
						if d := math.Abs(a - b); d > 1e-6*math.Sqrt(g2[i*stride+i]*g2[j*stride+j])+1e-30 {
							t.Fatalf("kernel %s n=%d k=%d (%d,%d): %g vs %g", c.Name, n, k, i, j, a, b)
						}
					}
				}
			}
		}
		if err := CheckGramKernel(c.Fn, syrkPanelGo); err != nil {
			t.Errorf("CheckGramKernel rejects %s: %v", c.Name, err)
		}
	}
	t.Logf("kernels %v, in use: %s", GramKernels.Names(), GramKernels.Name())
}

// TestCheckGramKernel: the start-up check rejects a kernel that is wrong.
func TestCheckGramKernel(t *testing.T) {
	if err := CheckGramKernel(syrkPanelGo, syrkPanelGo); err != nil {
		t.Fatal(err)
	}
	off := func(p []float32, k, stride int, g []float64) {
		syrkPanelGo(p, k, stride, g)
		g[1] += 1e-3 * math.Sqrt(g[0]*g[stride+1]) // one entry off
	}
	if err := CheckGramKernel(off, syrkPanelGo); err == nil {
		t.Error("a wrong kernel passed the check")
	}
	// A kernel that takes every panel for bf16 (truncating float32
	// values to their top 16 bits) is right on bf16 panels only.
	truncates := func(p []float32, k, stride int, g []float64) {
		q := make([]float32, len(p))
		for i, v := range p {
			q[i] = math.Float32frombits(math.Float32bits(v) &^ 0xffff)
		}
		syrkPanelGo(q, k, stride, g)
	}
	if err := CheckGramKernel(truncates, syrkPanelGo); err == nil {
		t.Error("a kernel that truncates float32 to bf16 passed the check")
	} else {
		t.Logf("rejected as it should be: %v", err)
	}
	// One that drops an odd k's last row.
	evenRows := func(p []float32, k, stride int, g []float64) { syrkPanelGo(p, k&^1, stride, g) }
	if err := CheckGramKernel(evenRows, syrkPanelGo); err == nil {
		t.Error("a kernel that drops an odd last row passed the check")
	}
}

// offFro is ‖D^-½(G − D)D^-½‖_F from an exact Gram.
func offFro(g *mat.SymDense) float64 {
	n := g.SymmetricDim()
	var s float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && g.At(i, i) > 0 && g.At(j, j) > 0 {
				v := g.At(i, j) / math.Sqrt(g.At(i, i)*g.At(j, j))
				s += v * v
			}
		}
	}
	return math.Sqrt(s)
}

func TestProbeAgainstExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct{ r, out, in int }{{32, 700, 400}, {16, 6, 300}, {24, 500, 24}, {64, 1024, 512}} {
		a, b := svdForm(rng, c.r, c.out, c.in)
		ga, gb := GramOfRows(a, c.r, c.in), GramOfCols(b, c.out, c.r)
		exact, _ := SingularValues(ga, gb, 1.5)
		for seed := uint64(0); seed < 5; seed++ {
			p := Probe(a, b, c.r, c.in, c.out, 1.5, 0, seed, nil)
			// The bound holds (it is a high-probability upper bound on the
			// spectral norm), and is not loose by more than ‖F‖_F would be.
			na, nb := offNorm2(ga), offNorm2(gb)
			if p.BoundA < na || p.BoundB < nb {
				t.Fatalf("%+v seed %d: bounds %g %g below the exact ‖F‖₂ %g %g", c, seed, p.BoundA, p.BoundB, na, nb)
			}
			// E‖F^qZ‖²_F = k·‖F^q‖²_F ≤ k·‖F‖^2q_F: B is about (k/t)^(1/2q)·‖F‖_F
			// ≈ 2.9·‖F‖_F at most, far less for a noise-like F of large r.
			if p.BoundA > 4*offFro(ga) || p.BoundB > 4*offFro(gb) {
				t.Errorf("%+v seed %d: bounds %g %g, over 4·‖F‖_F %g %g", c, seed, p.BoundA, p.BoundB, offFro(ga), offFro(gb))
			}
			if seed == 0 {
				t.Logf("%+v: B/‖F‖₂ %.2f %.2f, B/‖F‖_F %.2f %.2f", c, p.BoundA/na, p.BoundB/nb, p.BoundA/offFro(ga), p.BoundB/offFro(gb))
			}
			if f := FormOf(ga, gb); p.Accepts(FormTolerance) && f.Deviation() > FormTolerance {
				t.Fatalf("%+v: probes accept a form deviation of %g", c, f.Deviation())
			}
			if !p.Accepts(FormTolerance) {
				// With a short side the bf16 rounding averages out less:
				// rejection (and the exact fallback) is expected there.
				if min(c.in, c.out) >= 200 {
					t.Fatalf("%+v: SVD-form factors rejected: %+v", c, p)
				}
				continue
			}
			for i := range exact {
				if math.Abs(p.Sigma[i]-exact[i]) > p.SigmaBound*exact[i]+1e-6*exact[0] {
					t.Fatalf("%+v σ%d: probes %g, exact %g, bound %g", c, i, p.Sigma[i], exact[i], p.SigmaBound)
				}
			}
		}
	}
	// Factors not in SVD form are rejected.
	ra, rb := randBF16(rng, 16*300, 0.1), randBF16(rng, 200*16, 0.1)
	if p := Probe(ra, rb, 16, 300, 200, 1, 0, 1, nil); p.Accepts(FormTolerance) {
		t.Errorf("random factors accepted: %+v", p)
	}
}

// offNorm2 is ‖D^-½(G − D)D^-½‖₂ from an exact Gram, by an eigen-decomposition.
func offNorm2(g *mat.SymDense) float64 {
	n := g.SymmetricDim()
	f := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if g.At(i, i) > 0 && g.At(j, j) > 0 {
				f.SetSym(i, j, g.At(i, j)/math.Sqrt(g.At(i, i)*g.At(j, j)))
			}
		}
	}
	var e mat.EigenSym
	if !e.Factorize(f, false) {
		panic("eigen")
	}
	worst := 0.0
	for _, v := range e.Values(nil) {
		worst = max(worst, math.Abs(v))
	}
	return worst
}

// TestChi2Quantile checks the χ² quantiles against values from the closed
// forms: k = 2 is an exponential, P(χ²₂ ≤ t) = 1 − e^(−t/2).
func TestChi2Quantile(t *testing.T) {
	for _, d := range []float64{1e-7, 1e-3, 0.5} {
		want := -2 * math.Log1p(-d)
		if got := chi2Quantile(2, d); math.Abs(got-want) > 1e-9*want {
			t.Errorf("k=2 δ=%g: %g, want %g", d, got, want)
		}
	}
	// k = 8: P(χ²₈ ≤ t) = 1 − e^(−x)(1 + x + x²/2 + x³/6), x = t/2, at a larger δ
	// where the closed form has no cancellation.
	got := chi2Quantile(8, 0.25)
	x := got / 2
	if p := 1 - math.Exp(-x)*(1+x+x*x/2+x*x*x/6); math.Abs(p-0.25) > 1e-9 {
		t.Errorf("k=8: P(χ² ≤ %g) = %g, want 0.25", got, p)
	}
	t.Logf("δ=1e-7: t(8) = %.4g", chi2Quantile(8, 1e-7))
}

// TestProbeBoundHolds runs the probes on the estimator's worst case, F of
// rank one (A·Aᵀ = I + ε·v·vᵀ), with many seeds: the bound is never below
// the exact ‖F‖₂ = ε (it fails with probability 10⁻⁷), and it is not loose
// by much more than the χ² quantile makes it, (χ²_k / t)^¼.
func TestProbeBoundHolds(t *testing.T) {
	const r, n, k = 12, 400, DefaultProbes
	rng := rand.New(rand.NewPCG(3, 4))
	// Q: n × r with orthonormal columns.
	g := mat.NewDense(n, r, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < r; j++ {
			g.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	var q mat.Dense
	qr.QTo(&q)
	v := make([]float64, r)
	var vn float64
	for i := range v {
		v[i] = rng.NormFloat64()
		vn += v[i] * v[i]
	}
	const eps = 0.01
	m := mat.NewSymDense(r, nil)
	for i := 0; i < r; i++ {
		for j := i; j < r; j++ {
			x := eps * v[i] * v[j] / vn
			if i == j {
				x++
			}
			m.SetSym(i, j, x)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(m) {
		t.Fatal("cholesky")
	}
	var l mat.TriDense
	ch.LTo(&l)
	// A = L·Qᵀ (r × n): A·Aᵀ = L·Lᵀ = I + ε·v·vᵀ/‖v‖². Aᵀ = Q·Lᵀ.
	var at mat.Dense
	at.Mul(q.Slice(0, n, 0, r), l.T())
	atf := make([]float32, n*r) // Aᵀ, n × r
	af := make([]float32, r*n)  // A, r × n
	for i := 0; i < n; i++ {
		for j := 0; j < r; j++ {
			atf[i*r+j] = float32(at.At(i, j))
			af[j*n+i] = atf[i*r+j]
		}
	}
	b := make([]float32, r*r) // B = I: Bᵀ·B diagonal
	for i := 0; i < r; i++ {
		b[i*r+i] = 1
	}
	exact := offNorm2(GramOfCols(atf, n, r))
	worst := math.Inf(1)
	loosest := 0.0
	for seed := uint64(0); seed < 300; seed++ {
		p := Probe(af, b, r, n, r, 1, 0, seed, nil)
		worst = min(worst, p.BoundA/exact)
		loosest = max(loosest, p.BoundA/exact)
	}
	t.Logf("‖F‖₂ = %.4g; bound/‖F‖₂ over 300 seeds: %.3f to %.3f", exact, worst, loosest)
	if worst < 1 {
		t.Errorf("the bound fell below ‖F‖₂ (ratio %.3f)", worst)
	}
	if lim := math.Pow(40/chi2Quantile(k, ProbeDelta), 1/(2.0*PowerSteps)); loosest > lim {
		t.Errorf("bound up to %.2f·‖F‖₂, above (χ²_k ≤ 40 / t)^(1/2q) = %.2f", loosest, lim)
	}
}

// TestProbeKernelHook: installed loops are used for k = 4 (here the
// portable references themselves, counted), give the same bounds, and
// Kernels{} restores the built-in ones.
func TestProbeKernelHook(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, b := svdForm(rng, 32, 700, 400)
	want := Probe(a, b, 32, 400, 700, 1, 0, 1, nil)
	calls := map[string]int{}
	ProbeKernels.Install("counted", Kernels{Name: "counted",
		Apply4: func(x []float32, rows, r int, w, acc []float32) { calls["apply"]++; ApplyPortable(x, rows, r, w, acc) },
		Apply4Cols: func(a []float32, r, n, j0, cols int, w, t, acc []float32) {
			calls["cols"]++
			ApplyColsPortable(a, r, n, j0, cols, 4, w, t, acc)
		},
		ColSquares: func(x []float32, rows, r int, acc []float32) { calls["colsq"]++; ColSquaresPortable(x, rows, r, acc) },
		RowSquares: func(a []float32, r, n int, out []float64) { calls["rowsq"]++; RowSquaresPortable(a, r, n, out) },
	})
	defer ProbeKernels.Reset()
	got := Probe(a, b, 32, 400, 700, 1, 0, 1, nil)
	if len(calls) != 4 || ProbeKernel() != "counted" {
		t.Fatalf("the installed loops were not all used (%v, %q)", calls, ProbeKernel())
	}
	// The built-in loop takes rows in pairs: the same sums, rounded apart.
	if math.Abs(got.BoundA-want.BoundA) > 1e-4*want.BoundA || math.Abs(got.BoundB-want.BoundB) > 1e-4*want.BoundB || got.NormA != want.NormA || got.NormB != want.NormB {
		t.Errorf("bounds %g %g with the hooks, %g %g without", got.BoundA, got.BoundB, want.BoundA, want.BoundB)
	}
	ProbeKernels.Reset()
	if ProbeKernel() != "go" {
		t.Errorf("kernel %q after reset", ProbeKernel())
	}
}

// TestApplyColsMatchesRows: the column-block product of A equals the row
// product of its transpose (the two ways the probes apply a Gram).
func TestApplyColsMatchesRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const r, n = 24, 700
	a := randBF16(rng, r*n, 0.1)
	at := make([]float32, n*r)
	for i := 0; i < r; i++ {
		for j := 0; j < n; j++ {
			at[j*r+i] = a[i*n+j]
		}
	}
	w := randBF16(rng, r*4, 1)
	y1, y2 := make([]float64, r*4), make([]float64, r*4)
	gramApplyCols(a, r, n, 4, w, y1, nil)
	gramApply(at, n, r, 4, w, y2, nil)
	for i := range y1 {
		if math.Abs(y1[i]-y2[i]) > 1e-5*(1+math.Abs(y2[i])) {
			t.Fatalf("entry %d: %g by columns, %g by rows", i, y1[i], y2[i])
		}
	}
}
