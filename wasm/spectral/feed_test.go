package spectral

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/dtype"
)

// TestFeed: feeding encoded factors (bf16 inline, f32 by Decode32) gives the
// Grams of the decoded values, their traces and the non-finite count.
func TestFeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const r, in, out = 20, 150, 70
	a, b := randBF16(rng, r*in, 0.1), randBF16(rng, out*r, 0.1)
	wantA, wantB := GramOfRows(a, r, in), GramOfCols(b, out, r)
	for _, dt := range []string{"BF16", "F32"} {
		enc := func(x []float32) []byte {
			if dt == "BF16" {
				return dtype.EncodeBF16(nil, x)
			}
			return dtype.EncodeF32(nil, x)
		}
		ga, gb := NewGram(r), NewGram(r)
		nfA, ssA := ga.FeedColumns(dt, enc(a), r, in, nil, nil)
		nfB, ssB := gb.FeedRows(dt, enc(b), out, r, nil)
		if nfA+nfB != 0 {
			t.Fatalf("%s: %d non-finite values", dt, nfA+nfB)
		}
		for _, c := range []struct {
			name string
			got  *Gram
			want interface{ At(i, j int) float64 }
			ss   float64
		}{{"A·Aᵀ", ga, wantA, ssA}, {"Bᵀ·B", gb, wantB, ssB}} {
			g := c.got.Sym()
			tr := 0.0
			for i := 0; i < r; i++ {
				tr += g.At(i, i)
				for j := 0; j < r; j++ {
					// The same float32 panel sums in the same order: equal.
					if g.At(i, j) != c.want.At(i, j) {
						t.Fatalf("%s %s (%d,%d): %g, want %g", dt, c.name, i, j, g.At(i, j), c.want.At(i, j))
					}
				}
			}
			if math.Abs(c.ss-tr) > 1e-12*tr {
				t.Errorf("%s %s: trace %g, returned %g", dt, c.name, tr, c.ss)
			}
		}
	}
	bad := dtype.EncodeBF16(nil, a)
	bad[10], bad[11] = 0xc0, 0x7f // a NaN
	if nf, _ := NewGram(r).FeedColumns("BF16", bad, r, in, nil, nil); nf != 1 {
		t.Errorf("%d non-finite values, want 1", nf)
	}
}
