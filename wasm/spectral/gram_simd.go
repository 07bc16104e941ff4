//go:build goexperiment.simd && amd64

package spectral

import (
	"math"
	"simd/archsimd"
)

// The SIMD Gram kernels, built with GOEXPERIMENT=simd on amd64, all in Go
// assembly (the CPU features read with simd/archsimd): "avx2" (AVX2+FMA,
// gram_amd64.s), "avx512" (AVX-512F, 16 lanes, gram_amd64.s) and
// "avx512-bf16" (AVX512_BF16's VDPBF16PS, gram_bf16_simd.go). Plain builds
// (and wasm) have only syrkPanelGo; CheckGramKernel at start-up and
// TestKernelsAgree compare each with it. All read the packed panel in
// place (see Gram); the bf16 one packs it again, in pairs of rows.

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		// A kernel that disagrees with the portable one stays unused.
		_ = GramKernels.Try("avx2", syrkPanelAVX2, CheckGramKernel)
	}
	if archsimd.X86.AVX2() {
		_ = ColumnKernels.Try("avx2", bf16ColumnsAVX2, CheckColumnKernel)
		_ = RowKernels.Try("avx2", bf16RowsAVX2, CheckRowKernel)
	}
	if archsimd.X86.AVX512() {
		// "avx512-bf16" (gram_bf16_simd.go) falls back to "avx512": it is
		// tried only once that one is accepted.
		if GramKernels.Try("avx512", syrkPanelAVX512, CheckGramKernel) == nil && HasBF16() {
			_ = GramKernels.Try("avx512-bf16", syrkPanelBF16, CheckGramKernel)
		}
	}
}

// tileAVX2 is one 4 × 16 tile (gram_amd64.s).
//
//go:noescape
func tileAVX2(a, b *float32, k int, gp *float64, gstride int)

// tile6AVX2 is one 6 × 16 tile (gram_amd64.s).
//
//go:noescape
func tile6AVX2(a, b *float32, k int, gp *float64, gstride int)

// syrkPanelAVX2 sums Pᵀ·P block by block: the 16 rows of block ib against
// the 16 columns of block jb ≥ ib as tiles of 6, 6 and 4 rows (tile6AVX2,
// tileAVX2), twelve or eight 8-lane float32 accumulators, the two blocks
// (4 KiB each) staying in L1 for the three tiles.
func syrkPanelAVX2(p []float32, k, stride int, g []float64) {
	if k <= 0 {
		return
	}
	if k > PanelRows || stride%PanelBlock != 0 || len(p) < PanelRows*stride || len(g) < stride*stride {
		panic("spectral: syrkPanelAVX2: bad panel")
	}
	nb := stride / PanelBlock
	for ib := 0; ib < nb; ib++ {
		i0 := ib * PanelBlock
		a := PanelAt(0, i0)
		for jb := ib; jb < nb; jb++ {
			b, j0 := &p[jb*PanelRows*PanelBlock], jb*PanelBlock
			tile6AVX2(&p[a], b, k, &g[i0*stride+j0], stride)
			tile6AVX2(&p[a+6], b, k, &g[(i0+6)*stride+j0], stride)
			tileAVX2(&p[a+12], b, k, &g[(i0+12)*stride+j0], stride)
		}
	}
}

// tile16AVX512 is one 16 × 16 tile (gram_amd64.s).
//
//go:noescape
func tile16AVX512(a, b *float32, k int, gp *float64, gstride int)

// syrkPanelAVX512 sums Pᵀ·P block by block: block ib against each block
// jb ≥ ib as one 16 × 16 tile (tile16AVX512) in sixteen 16-lane float32
// accumulators, the two blocks (4 KiB each) in L1. In Go assembly, as the
// AVX2 kernel: the same loop in simd/archsimd (8 × 16 tiles, a broadcast
// per multiply-add, bounds-checked loads) ran at 25.8 GFMA/s on a Zen 5
// core where this one runs at 86 and the AVX2 kernel at 47–51
// (BenchmarkGramKernels).
func syrkPanelAVX512(p []float32, k, stride int, g []float64) {
	if k <= 0 {
		return
	}
	if k > PanelRows || stride%PanelBlock != 0 || len(p) < PanelRows*stride || len(g) < stride*stride {
		panic("spectral: syrkPanelAVX512: bad panel")
	}
	nb := stride / PanelBlock
	for ib := 0; ib < nb; ib++ {
		i0 := ib * PanelBlock
		a := &p[ib*PanelRows*PanelBlock]
		for jb := ib; jb < nb; jb++ {
			tile16AVX512(a, &p[jb*PanelRows*PanelBlock], k, &g[i0*stride+jb*PanelBlock], stride)
		}
	}
}

// columnsAVX2 widens an 8 × 8·n8 bf16 block into a packed panel,
// transposed (gram_amd64.s).
//
//go:noescape
func columnsAVX2(src *byte, pitch int, dst *float32, n8 int) (nonfinite int)

// bf16ColumnsAVX2 is a ColumnKernel: groups of 8 rows × 8 columns in
// assembly, the rest by the portable loop.
func bf16ColumnsAVX2(src []byte, pitch int, p []float32, rows, k int) (nonfinite int) {
	if k == 0 || rows == 0 {
		return 0
	}
	k8, r8 := k&^7, rows&^7
	if k > PanelRows || len(src) < (rows-1)*pitch+2*k || len(p) < PanelAt(k-1, rows-1)+1 {
		panic("spectral: bf16ColumnsAVX2: bad block")
	}
	if k8 > 0 {
		for u := 0; u < r8; u += 8 {
			nonfinite += columnsAVX2(&src[u*pitch], pitch, &p[PanelAt(0, u)], k8/8)
		}
	}
	if k8 < k { // the last columns of every row
		for u := 0; u < r8; u++ {
			base := PanelAt(k8, u)
			nonfinite += bf16Column(src[u*pitch+2*k8:u*pitch+2*k], p[base:base+16*(k-k8-1)+1])
		}
	}
	if r8 < rows { // the last rows
		nonfinite += bf16ColumnsGo(src[r8*pitch:], pitch, p[PanelAt(0, r8):], rows-r8, k) // rows-r8 < 8: within one block
	}
	return nonfinite
}

// rowAVX2 widens 16·nblk bf16 values into one row of a packed panel
// (gram_amd64.s).
//
//go:noescape
func rowAVX2(src *byte, dst *float32, nblk int) (nonfinite int)

// bf16RowsAVX2 is a RowKernel: each row's whole blocks of 16 in
// assembly, the rest by the portable loop.
func bf16RowsAVX2(src []byte, pitch int, p []float32, k, n int) (nonfinite int) {
	if k > 0 && len(src) < (k-1)*pitch+2*n {
		panic("spectral: bf16RowsAVX2: bad rows")
	}
	for t := 0; t < k; t++ {
		nonfinite += bf16RowAVX2(src[t*pitch:], p, t, n)
	}
	return nonfinite
}

// bf16RowAVX2 widens one row into panel row t.
func bf16RowAVX2(src []byte, p []float32, t, n int) (nonfinite int) {
	nb := n / PanelBlock
	if t < 0 || t >= PanelRows || len(src) < 2*n || (nb > 0 && len(p) < PanelAt(t, nb*PanelBlock-1)+1) {
		panic("spectral: bf16RowAVX2: bad row")
	}
	if nb > 0 {
		nonfinite = rowAVX2(&src[0], &p[PanelAt(t, 0)], nb)
	}
	if c0 := nb * PanelBlock; c0 < n {
		at := PanelAt(t, c0) // the tail (fewer than 16) is within one block
		for j := 0; j < n-c0; j++ {
			u := uint32(src[2*(c0+j)]) | uint32(src[2*(c0+j)+1])<<8
			nonfinite += int(((u & 0x7f80) + 0x80) >> 15)
			p[at+j] = math.Float32frombits(u << 16)
		}
	}
	return nonfinite
}
