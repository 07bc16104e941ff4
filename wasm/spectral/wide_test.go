package spectral

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestAddWide: blocks fed through AddWide, by runs of rows (Xᵀ·X) and by
// strips of columns (X·Xᵀ), give the Gram gonum's dense product gives for
// the whole X, within 10⁻¹² (float64 sums of a few hundred products), on
// values up to 2¹⁰⁰ that no float32 Gram could hold.
func TestAddWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const rows, cols = 300, 20
	x := make([]float64, rows*cols)
	for i := range x {
		x[i] = rng.NormFloat64() * math.Exp2(float64(rng.IntN(200)-100))
	}
	X := mat.NewDense(rows, cols, x)
	for _, columns := range []bool{false, true} {
		// By rows the factor is X and the Gram Xᵀ·X; by columns the factor
		// is Xᵀ and the Gram Xᵀ·(Xᵀ)ᵀ: the same matrix either way.
		var want mat.Dense
		want.Mul(X.T(), X)
		n := cols
		g := NewGram(n)
		if columns {
			// The fed factor is Xᵀ (cols × rows); strips of its columns.
			xt := mat.DenseCopyOf(X.T())
			for c0 := 0; c0 < rows; c0 += 64 {
				w := min(64, rows-c0)
				strip := make([]float64, 0, cols*w)
				for i := 0; i < cols; i++ {
					strip = append(strip, xt.RawRowView(i)[c0:c0+w]...)
				}
				g.AddWide(strip, cols, w, true)
			}
		} else {
			for i0 := 0; i0 < rows; i0 += 64 {
				k := min(64, rows-i0)
				g.AddWide(x[i0*cols:(i0+k)*cols], k, cols, false)
			}
		}
		s := g.Sym()
		tr := 0.0
		for i := 0; i < n; i++ {
			tr += want.At(i, i)
			for j := i; j < n; j++ {
				w := want.At(i, j)
				if d := math.Abs(s.At(i, j) - w); !(d <= 1e-12*math.Sqrt(want.At(i, i)*want.At(j, j))) {
					t.Fatalf("columns=%v: G[%d][%d] = %g, gonum %g", columns, i, j, s.At(i, j), w)
				}
			}
		}
		if got := g.Trace(); math.Abs(got-tr) > 1e-12*tr {
			t.Errorf("columns=%v: trace %g, want %g", columns, got, tr)
		}
	}
}
