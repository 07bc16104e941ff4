//go:build js && wasm

package worker

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/spectral"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// check compares every kernel with its portable loop on random data of
// awkward sizes (one row, several blocks, tails); the sums differ only in
// rounding, the decoded values and counts not at all.
func (k *simd) check() error {
	rng := rand.New(rand.NewPCG(7, 8))
	randn := func(n int, nonfinite bool) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	close := func(what string, got, want []float32) error {
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-4*(1+math.Abs(float64(want[i])))) {
				return fmt.Errorf("the SIMD %s gives %g for %g at %d", what, got[i], want[i], i)
			}
		}
		return nil
	}
	// (apply4 takes r a multiple of 4, the portable loop the others;
	// apply4cols blocks of even r, its last cols % 4 columns portable)
	for _, size := range [][2]int{{1, 4}, {3, 16}, {37, 256}, {300, 12}, {64, 40}, {8, 256}, {64, 48}, {6, 10}} {
		rows, r := size[0], size[1]
		x, w := randn(rows*r, false), randn(r*4, false)
		got, want := make([]float32, r*4), make([]float32, r*4)
		for i := range got {
			got[i], want[i] = float32(i), float32(i) // accumulates onto what is there
		}
		k.probes.Apply4(x, rows, r, w, got)
		spectral.ApplyPortable(x, rows, r, w, want)
		if err := close("probe product", got, want); err != nil {
			return err
		}
		gs, ws := make([]float32, r), make([]float32, r)
		k.probes.ColSquares(x, rows, r, gs)
		spectral.ColSquaresPortable(x, rows, r, ws)
		if err := close("column squares", gs, ws); err != nil {
			return err
		}
		// The same data as A (r' = rows, n = r): a column block and the row norms.
		a, n := x, r
		j0, cols := n/4, n-n/4
		t := make([]float32, cols*4)
		wr := randn(rows*4, false)
		ga, wa := make([]float32, rows*4), make([]float32, rows*4)
		k.probes.Apply4Cols(a, rows, n, j0, cols, wr, t, ga)
		spectral.ApplyColsPortable(a, rows, n, j0, cols, 4, wr, make([]float32, cols*4), wa)
		if err := close("column-block product", ga, wa); err != nil {
			return err
		}
		gr, wrs := make([]float64, rows), make([]float64, rows)
		k.probes.RowSquares(a, rows, n, gr)
		spectral.RowSquaresPortable(a, rows, n, wrs)
		for i := range gr {
			if math.Abs(gr[i]-wrs[i]) > 1e-5*wrs[i] {
				return fmt.Errorf("the SIMD row squares give %g for %g", gr[i], wrs[i])
			}
		}
	}
	// bf16: scan and decode, with NaN and ±Inf, over several blocks.
	for _, n := range []int{8, 64, 8 * 64, 8*64*3 + 40} {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			v := uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
			switch rng.IntN(50) {
			case 0:
				v = 0x7fc0 // NaN
			case 1:
				v = 0xff80 // −Inf
			}
			binary.LittleEndian.PutUint16(b[2*i:], v)
		}
		nf, ss := k.scan(b)
		wnf, wss := dtype.ScanBF16(b)
		if nf != wnf || math.Abs(ss-wss) > 1e-4*wss {
			return fmt.Errorf("the SIMD scan gives %d non-finite and Σx² = %g for %d and %g (%d values)", nf, ss, wnf, wss, n)
		}
		bulk := n / 8 * 8
		got := make([]float32, bulk)
		nf = k.decode(b[:2*bulk], got)
		wnf = 0
		for i := 0; i < bulk; i++ {
			want := dtype.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				return fmt.Errorf("the SIMD decode gives %x for %x", math.Float32bits(got[i]), math.Float32bits(want))
			}
			if f := float64(want); math.IsNaN(f) || math.IsInf(f, 0) {
				wnf++
			}
		}
		if nf != wnf {
			return fmt.Errorf("the SIMD decode counts %d non-finite values, not %d", nf, wnf)
		}
	}
	// Sgemm, by the kernel (C = α·A·Bᵀ + β·C) and by gonum for the rest.
	for _, sh := range [][3]int{{1, 1, 4}, {3, 5, 16}, {37, 192, 64}, {150, 64, 192}, {7, 9, 6}} {
		m, n, kk := sh[0], sh[1], sh[2]
		a, bb := randn(m*kk, false), randn(n*kk, false)
		for _, ab := range [][2]float32{{1, 0}, {0.5, 1}} {
			got, want := randn(m*n, false), make([]float32, m*n)
			copy(want, got)
			k.blas.Sgemm(blas.NoTrans, blas.Trans, m, n, kk, ab[0], a, kk, bb, kk, ab[1], got, n)
			gonum.Implementation{}.Sgemm(blas.NoTrans, blas.Trans, m, n, kk, ab[0], a, kk, bb, kk, ab[1], want, n)
			if err := close(fmt.Sprintf("Sgemm (%d × %d × %d)", m, n, kk), got, want); err != nil {
				return err
			}
		}
	}
	if err := spectral.CheckRowKernel(k.rows, spectral.RowKernels.Portable()); err != nil {
		return fmt.Errorf("the SIMD row decode: %w", err)
	}
	if err := spectral.CheckColumnKernel(k.cols, spectral.ColumnKernels.Portable()); err != nil {
		return fmt.Errorf("the SIMD column decode: %w", err)
	}
	if err := runner.CheckSHA256(k.sha256, runner.SHA256.Portable()); err != nil {
		return fmt.Errorf("the WebAssembly SHA-256: %w", err)
	}
	// The Gram panels: package spectral's own check (bf16 values, one row
	// to a full panel, 16 and 48 columns), then a panel as wide as a
	// rank-256 pair's onto a Gram that already holds sums.
	if err := spectral.CheckGramKernel(k.gram, spectral.GramKernels.Portable()); err != nil {
		return fmt.Errorf("the SIMD Gram: %w", err)
	}
	const stride, rows = 256, spectral.PanelRows
	p := randn(rows*stride, false)
	got, want := make([]float64, stride*stride), make([]float64, stride*stride)
	for i := range got {
		got[i], want[i] = float64(i%7), float64(i%7)
	}
	k.gram(p, rows, stride, got)
	spectral.GramKernels.Portable()(p, rows, stride, want)
	for i := 0; i < stride; i++ {
		for j := i; j < stride; j++ {
			if d := math.Abs(got[i*stride+j] - want[i*stride+j]); !(d <= 1e-5*(1+math.Abs(want[i*stride+j]))) {
				return fmt.Errorf("the SIMD Gram gives %g for %g at (%d, %d) of %d", got[i*stride+j], want[i*stride+j], i, j, stride)
			}
		}
	}
	return nil
}
