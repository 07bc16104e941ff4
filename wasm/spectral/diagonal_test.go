package spectral

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/kvit-s/clefcheck/wasm/dtype"
)

// gramsOf returns A·Aᵀ and Bᵀ·B as the exact route computes them.
func gramsOf(a, b []float32, r, out, in int) (ga, gb *mat.SymDense) {
	return GramOfRows(a, r, in), GramOfCols(b, out, r)
}

// within checks that every eigensolver σᵢ lies within the diagonal
// spectrum's bound. The bound is a theorem about the same Grams, so the
// only slack is the eigensolver's float64 rounding (10⁻¹²·σ₁).
func within(t *testing.T, what string, d Diagonal, exact []float64) {
	t.Helper()
	for i := range exact {
		if diff := math.Abs(exact[i] - d.Sigma[i]); diff > d.Bound*d.Sigma[i]+1e-12*exact[0] {
			t.Fatalf("%s σ%d: eigensolver %g, diagonal %g (off by %.3g relative), bound %.3g", what, i, exact[i], d.Sigma[i], diff/d.Sigma[i], d.Bound)
		}
	}
}

// TestDiagonalAgainstEigensolver: on genuine bf16 factorisations in SVD
// form the shortcut is taken, and every σ the eigensolver gives on the same
// Grams lies within its bound; ‖s·B·A‖_F agrees with √Σσ² to rounding.
func TestDiagonalAgainstEigensolver(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ r, out, in int }{{8, 400, 300}, {16, 1024, 640}, {32, 2048, 512}} {
		a, b := svdForm(rng, c.r, c.out, c.in)
		ga, gb := gramsOf(a, b, c.r, c.out, c.in)
		d, ok := DiagonalSpectrum(ga, gb, 2)
		if !ok || !d.Accepts(DiagonalTolerance) {
			t.Fatalf("%+v: SVD-form factors not accepted (ok %v, ρa %.3g, ρb %.3g, bound %.3g)", c, ok, d.RowA, d.RowB, d.Bound)
		}
		exact, err := SingularValues(ga, gb, 2)
		if err != nil {
			t.Fatal(err)
		}
		within(t, "svd form", d, exact)
		if f := FroFromSigma(exact); math.Abs(d.Fro-f) > 1e-9*f {
			t.Fatalf("%+v: ‖s·B·A‖_F %g from the Grams, %g from the eigenvalues", c, d.Fro, f)
		}
		t.Logf("%+v: ρa %.2e, ρb %.2e, bound %.2e", c, d.RowA, d.RowB, d.Bound)
	}
}

// TestDiagonalBoundOnRandomGrams: the bound holds on random near-diagonal
// Grams of every closeness, including ones beyond DiagonalTolerance (the
// bound is a theorem, whatever its size): Ga = Da^½(I + ε·E)Da^½ with E a
// random symmetric matrix, for ε from 10⁻⁵ to 10⁻¹.
func TestDiagonalBoundOnRandomGrams(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	near := func(r int, eps float64) *mat.SymDense {
		d := make([]float64, r)
		for i := range d {
			d[i] = math.Exp(rng.NormFloat64())
		}
		g := mat.NewSymDense(r, nil)
		for i := 0; i < r; i++ {
			g.SetSym(i, i, d[i])
			for j := i + 1; j < r; j++ {
				g.SetSym(i, j, eps*rng.NormFloat64()/math.Sqrt(float64(r))*math.Sqrt(d[i]*d[j]))
			}
		}
		return g
	}
	for _, r := range []int{4, 37, 128} {
		for _, eps := range []float64{1e-5, 1e-3, 1e-2, 1e-1} {
			ga, gb := near(r, eps), near(r, eps)
			d, ok := DiagonalSpectrum(ga, gb, 0.5)
			if !ok {
				if d.RowA < 1 && d.RowB < 1 {
					t.Fatalf("r=%d ε=%g: no bound with ρa %.3g, ρb %.3g", r, eps, d.RowA, d.RowB)
				}
				continue
			}
			exact, err := SingularValues(ga, gb, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			within(t, "random", d, exact)
		}
	}
	// Where the bound is tight: Ga = I + ε·(J − I) (J all ones) has the
	// eigenvalue 1 + ε·(r − 1) = 1 + ρa, with Gb = I: σ₁ = √(1 + ρa) is at
	// the bound's upper end, so a bound any smaller would fail here.
	for _, r := range []int{2, 16} {
		const eps = 1e-4
		ga, gb := mat.NewSymDense(r, nil), mat.NewSymDense(r, nil)
		for i := 0; i < r; i++ {
			gb.SetSym(i, i, 1)
			for j := i; j < r; j++ {
				ga.SetSym(i, j, eps)
			}
			ga.SetSym(i, i, 1)
		}
		d, ok := DiagonalSpectrum(ga, gb, 1)
		exact, err := SingularValues(ga, gb, 1)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		within(t, "tight", d, exact)
		if got := exact[0] - d.Sigma[0]; got < 0.99*d.Bound*d.Sigma[0] {
			t.Fatalf("r=%d: σ₁ is off by %.3g, the bound %.3g should be tight here", r, got, d.Bound)
		}
	}
}

// rotate returns A' = Q·A and B' = B·Qᵀ for a random orthogonal r × r Q,
// rounded to bf16: the same product B·A (to bf16 rounding), factors no
// longer in SVD form.
func rotate(rng *rand.Rand, a, b []float32, r, out, in int) (a2, b2 []float32) {
	m := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(m)
	var q mat.Dense
	qr.QTo(&q)
	a2 = make([]float32, r*in)
	for i := 0; i < r; i++ {
		for c := 0; c < in; c++ {
			s := 0.0
			for k := 0; k < r; k++ {
				s += q.At(i, k) * float64(a[k*in+c])
			}
			a2[i*in+c] = dtype.RoundBF16(float32(s))
		}
	}
	b2 = make([]float32, out*r)
	for o := 0; o < out; o++ {
		for j := 0; j < r; j++ {
			s := 0.0
			for k := 0; k < r; k++ {
				s += float64(b[o*r+k]) * q.At(j, k)
			}
			b2[o*r+j] = dtype.RoundBF16(float32(s))
		}
	}
	return a2, b2
}

// TestDiagonalRotatedFallsBack: a rotated pair has the same spectrum, but
// its Grams are far from diagonal: the shortcut declines (its bound is far
// beyond the tolerance, or there is none), and the eigensolver gives the
// spectrum of the unrotated pair (within bf16 rounding of the rotated
// factors: 8 significant bits, so a few parts in 10³).
func TestDiagonalRotatedFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	const r, out, in = 16, 600, 400
	a, b := svdForm(rng, r, out, in)
	ga, gb := gramsOf(a, b, r, out, in)
	want, err := SingularValues(ga, gb, 1)
	if err != nil {
		t.Fatal(err)
	}
	a2, b2 := rotate(rng, a, b, r, out, in)
	ga2, gb2 := gramsOf(a2, b2, r, out, in)
	d, ok := DiagonalSpectrum(ga2, gb2, 1)
	if ok && d.Accepts(DiagonalTolerance) {
		t.Fatalf("rotated factors accepted: ρa %.3g, ρb %.3g, bound %.3g", d.RowA, d.RowB, d.Bound)
	}
	got, err := SingularValues(ga2, gb2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if want[i] > 1e-2*want[0] && math.Abs(got[i]-want[i]) > 1.0/128*want[i] {
			t.Fatalf("σ%d: rotated %g, unrotated %g", i, got[i], want[i])
		}
	}
	if ok {
		within(t, "rotated", d, got) // the bound still holds where it exists
	}
}

// TestDiagonalTamperedMoves: scaling one direction of a factor in SVD form
// (row k of A by 1.1) keeps the Grams diagonal, so the shortcut is taken —
// and its spectrum shows the change (σ_k grows by 10%), as the
// eigensolver's does.
func TestDiagonalTamperedMoves(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	const r, out, in = 16, 600, 400
	a, b := svdForm(rng, r, out, in)
	ga, gb := gramsOf(a, b, r, out, in)
	d0, _ := DiagonalSpectrum(ga, gb, 1)
	const k = 3
	for c := 0; c < in; c++ {
		a[k*in+c] = dtype.RoundBF16(1.1 * a[k*in+c])
	}
	ga, gb = gramsOf(a, b, r, out, in)
	d, ok := DiagonalSpectrum(ga, gb, 1)
	if !ok || !d.Accepts(DiagonalTolerance) {
		t.Fatalf("tampered factors still diagonal, but not accepted: bound %.3g", d.Bound)
	}
	exact, err := SingularValues(ga, gb, 1)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "tampered", d, exact)
	// σ_k (the k-th largest: the spectrum decays by 0.8 per step, so the
	// order is kept) moved by ≈ 10%, far beyond the bound.
	if rel := d.Sigma[k]/d0.Sigma[k] - 1; math.Abs(rel-0.1) > 0.01 {
		t.Fatalf("σ%d moved by %.3g, want ≈ 0.1", k, rel)
	}
}

// TestDiagonalDegenerate: zero factors give a zero spectrum with no bound
// needed; a non-zero entry against a zero diagonal has no bound; values
// that are not finite have none.
func TestDiagonalDegenerate(t *testing.T) {
	z := mat.NewSymDense(4, nil)
	d, ok := DiagonalSpectrum(z, z, 1)
	if !ok || d.Bound != 0 || d.Sigma[0] != 0 || d.Fro != 0 {
		t.Fatalf("zero Grams: %+v %v", d, ok)
	}
	g := mat.NewSymDense(2, []float64{0, 1e-3, 1e-3, 1})
	if _, ok := DiagonalSpectrum(g, g, 1); ok {
		t.Fatal("a non-zero entry against a zero diagonal got a bound")
	}
	g = mat.NewSymDense(2, []float64{math.Inf(1), 0, 0, 1})
	if _, ok := DiagonalSpectrum(g, g, 1); ok {
		t.Fatal("an infinite Gram got a bound")
	}
}
