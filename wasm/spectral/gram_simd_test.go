//go:build goexperiment.simd && amd64

package spectral

import (
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"
)

// TestSIMDKernelsAgainstEachOther compares the AVX2 and AVX-512 Gram
// kernels with the portable one and with each other, directly (not only
// the ones the start-up check installed), on every panel shape the feeders
// make: k from 1 to PanelRows rows, 16 to 272 columns. Tolerance: each
// kernel sums the same exact float32 products (bf16 × bf16) in its own
// order over at most 64 rows, so entries agree within 64·2⁻²⁴·√(Gᵢᵢ·Gⱼⱼ);
// the test asks 10⁻⁶·√(Gᵢᵢ·Gⱼⱼ), as CheckGramKernel does. A kernel the
// CPU lacks is skipped, and said so.
func TestSIMDKernelsAgainstEachOther(t *testing.T) {
	ks := []struct {
		name string
		fn   GramKernel
		has  bool
	}{
		{"avx2", syrkPanelAVX2, archsimd.X86.AVX2() && archsimd.X86.FMA()},
		{"avx512", syrkPanelAVX512, archsimd.X86.AVX512()},
		{"avx512-bf16", syrkPanelBF16, HasBF16()},
	}
	rng := rand.New(rand.NewPCG(51, 52))
	ran := 0
	for _, n := range []int{16, 32, 48, 256, 272} {
		for _, k := range []int{1, 3, 8, 33, PanelRows} {
			p := Pack(randBF16(rng, PanelRows*n, 0.05), k, n)
			want := make([]float64, n*n)
			syrkPanelGo(p, k, n, want)
			got := map[string][]float64{}
			for _, c := range ks {
				if !c.has {
					continue
				}
				g := make([]float64, n*n)
				for i := range g {
					g[i] = 1 // added to, not overwritten
				}
				c.fn(p, k, n, g)
				for i := 0; i < n; i++ {
					for j := i; j < n; j++ {
						d := math.Abs(g[i*n+j] - 1 - want[i*n+j])
						if d > 1e-6*math.Sqrt(want[i*n+i]*want[j*n+j])+1e-12 {
							t.Fatalf("%s n=%d k=%d (%d,%d): %g, portable %g", c.name, n, k, i, j, g[i*n+j]-1, want[i*n+j])
						}
					}
				}
				got[c.name] = g
				ran++
			}
			for x, cx := range ks {
				for _, cy := range ks[x+1:] {
					a, b := got[cx.name], got[cy.name]
					if a == nil || b == nil {
						continue
					}
					for i := 0; i < n; i++ {
						for j := i; j < n; j++ {
							if d := math.Abs(a[i*n+j] - b[i*n+j]); d > 1e-6*math.Sqrt(want[i*n+i]*want[j*n+j])+1e-12 {
								t.Fatalf("%s and %s differ, n=%d k=%d (%d,%d): %g, %g", cx.name, cy.name, n, k, i, j, a[i*n+j], b[i*n+j])
							}
						}
					}
				}
			}
		}
	}
	for _, c := range ks {
		if !c.has {
			t.Logf("kernel %s not tested: this CPU lacks it", c.name)
		}
	}
	if ran == 0 {
		t.Skip("this CPU has neither AVX2+FMA nor AVX-512")
	}
}
