//go:build goexperiment.simd && amd64

package spectral

import (
	"math"
	"simd/archsimd"
	"sync"
)

// The bf16 dot-product Gram kernel "avx512-bf16" (AVX512_BF16,
// gram_bf16_amd64.s): a GramKernel like the others, for a panel whose
// values are all bf16 — the feeders' panels of a bf16 adapter. It packs the
// panel's rows in pairs as bf16 (packBF16) and sums each entry with
// VDPBF16PS, which multiplies two pairs of bf16 and adds both exact
// products to a float32 sum: half the instructions of tile16AVX512 for the
// same sums. VDPBF16PS treats subnormal inputs and results as zero, so a
// panel with a value that is not a bf16, or nonzero and under 2⁻⁴⁰, or of
// 2⁶⁰ and more, goes to syrkPanelAVX512 instead. Within that range every
// product and partial sum is a nonzero multiple of 2⁻⁹⁴ or zero, and under
// 64·2¹²⁰ in magnitude: no subnormal arises and nothing overflows, so the
// two kernels differ only in the order of the float32 additions, as the
// others do (CheckGramKernel's 10⁻⁶·√(Gᵢᵢ·Gⱼⱼ)).

// HasBF16 reports whether the CPU has AVX512_BF16 (with AVX-512F and the
// OS saving the ZMM state).
func HasBF16() bool { return archsimd.X86.AVX512() && cpuidBF16() }

func cpuidBF16() bool

//go:noescape
func packBF16(p *float32, dst *uint32, pairs, nblk int) (bad int)

//go:noescape
func tile16BF16(a, b *uint32, pairs int, gp *float64, gstride int)

// pairWords is the size of one block's bf16 pairs: PanelRows/2 pairs of 16
// words.
const pairWords = PanelRows / 2 * PanelBlock

// pairBufs holds the packed pairs between panels (one per goroutine at a
// time: a Gram's Flush is not shared).
var pairBufs = sync.Pool{New: func() any { return new([]uint32) }}

// syrkPanelBF16 is the GramKernel "avx512-bf16": pack the panel's k rows
// as ⌈k/2⌉ pairs (an odd last row paired with zeros, never with the stale
// rows beyond k), then block ib against each block jb ≥ ib as one 16 × 16
// tile (tile16BF16), the packed blocks (2 KiB each) in L1. A panel
// bf16Panel cannot take goes to syrkPanelAVX512.
func syrkPanelBF16(p []float32, k, stride int, g []float64) {
	if !bf16Panel(p, k, stride, g) {
		syrkPanelAVX512(p, k, stride, g)
	}
}

// bf16Panel adds Pᵀ·P with VDPBF16PS and reports true, or reports false
// and adds nothing when a value of rows 0..k−1 is not pairable.
func bf16Panel(p []float32, k, stride int, g []float64) bool {
	if k <= 0 {
		return true
	}
	if k > PanelRows || stride%PanelBlock != 0 || len(p) < PanelRows*stride || len(g) < stride*stride {
		panic("spectral: syrkPanelBF16: bad panel")
	}
	nb := stride / PanelBlock
	buf := pairBufs.Get().(*[]uint32)
	defer pairBufs.Put(buf)
	if cap(*buf) < nb*pairWords {
		*buf = make([]uint32, nb*pairWords)
	}
	s := (*buf)[:nb*pairWords]
	bad := 0
	if k >= 2 {
		bad = packBF16(&p[0], &s[0], k/2, nb)
	}
	if k&1 == 1 && bad == 0 {
		bad = packLastRow(p, s, k-1, nb)
	}
	if bad != 0 {
		return false
	}
	pairs := (k + 1) / 2
	for ib := 0; ib < nb; ib++ {
		i0 := ib * PanelBlock
		a := &s[ib*pairWords]
		for jb := ib; jb < nb; jb++ {
			tile16BF16(a, &s[jb*pairWords], pairs, &g[i0*stride+jb*PanelBlock], stride)
		}
	}
	return true
}

// packLastRow packs an odd k's last row t (even) as pair t/2's low halves,
// its high halves zero, with packBF16's test of the values.
func packLastRow(p []float32, s []uint32, t, nb int) (bad int) {
	for b := 0; b < nb; b++ {
		row := p[PanelAt(t, b*PanelBlock) : PanelAt(t, b*PanelBlock)+PanelBlock]
		dst := s[b*pairWords+t/2*PanelBlock : b*pairWords+t/2*PanelBlock+PanelBlock]
		for j, v := range row {
			u := math.Float32bits(v)
			if !pairable(u) {
				bad = 1
			}
			dst[j] = u >> 16
		}
	}
	return bad
}

// pairable is packBF16's test of one value: exactly a bf16, and zero or of
// magnitude in [2⁻⁴⁰, 2⁶⁰).
func pairable(u uint32) bool {
	abs := u & 0x7fffffff
	return u&0xffff == 0 && (abs == 0 || abs >= 87<<23 && abs < 187<<23)
}
