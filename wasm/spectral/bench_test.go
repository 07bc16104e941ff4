package spectral

import (
	"math/rand/v2"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/kernels"
)

// BenchmarkGram256 is the Gram of one 17408 × 256 factor (Bᵀ·B of gate_proj).
func BenchmarkGram256(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x := randBF16(rng, 17408*256, 0.01)
	b.SetBytes(int64(len(x)) * 2)
	b.ReportAllocs()
	g := NewGram(256)
	for b.Loop() {
		g.Reset()
		for i := 0; i < 17408; i++ {
			g.AddRow(x[i*256 : (i+1)*256])
		}
		g.Flush()
	}
	b.ReportMetric(float64(17408*256*257/2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
}

func BenchmarkSingularValues256(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, bb := svdForm(rng, 256, 300, 280)
	ga, gb := GramOfRows(a, 256, 280), GramOfCols(bb, 300, 256)
	for b.Loop() {
		SingularValues(ga, gb, 1)
	}
}

// BenchmarkGramApply256 is one pass of the probes over a 17408 × 256
// factor with k = 8 (x ⊗ (x·w) per row): the browser's hot loop.
func BenchmarkGramApply256(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	x := randBF16(rng, 17408*256, 0.01)
	const k = DefaultProbes
	w := randBF16(rng, 256*k, 1)
	y := make([]float64, 256*k)
	b.SetBytes(int64(len(x)) * 2)
	for b.Loop() {
		gramApply(x, 17408, 256, k, w, y, nil)
	}
	b.ReportMetric(float64(2*17408*256*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
}

// BenchmarkGramKernels is the panel update alone, for every kernel built
// in, on a full panel of a 256-column Gram.
func BenchmarkGramKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 4))
	const n = 256
	p := Pack(randBF16(rng, PanelRows*n, 0.01), PanelRows, n)
	g := make([]float64, n*n)
	all := append([]kernels.Kernel[GramKernel]{{Name: kernels.Portable, Fn: GramKernels.Portable()}}, GramKernels.Candidates()...)
	for _, k := range all {
		b.Run(k.Name, func(b *testing.B) {
			for b.Loop() {
				k.Fn(p, PanelRows, n, g)
			}
			b.ReportMetric(float64(PanelRows*n*(n+16)/2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
		})
	}
}
