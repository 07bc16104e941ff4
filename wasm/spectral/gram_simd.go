//go:build goexperiment.simd && amd64

package spectral

import (
	"simd/archsimd"
	"unsafe"
)

// The AVX2+FMA Gram kernel, built with GOEXPERIMENT=simd. Plain builds (and
// wasm) have only syrkPanelGo; CheckGramKernel and TestKernelsAgree compare
// the two.

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		// A kernel that disagrees with the portable one stays unused.
		_ = GramKernels.Try("avx2", syrkPanelAVX2, CheckGramKernel)
	}
}

// packed is the panel re-laid in blocks of 16 columns, each block's k rows
// contiguous, so that the tile loop reads memory sequentially.
var packPool = make(chan []float32, 8)

// syrkPanelAVX2 sums 4 × 16 tiles of Pᵀ·P in eight 8-lane float32
// accumulators: per row of P, two loads, four broadcasts and eight
// multiply-adds, all from the packed copy.
func syrkPanelAVX2(p []float32, k, stride int, g []float64) {
	var packed []float32
	select {
	case packed = <-packPool:
	default:
	}
	if cap(packed) < k*stride {
		packed = make([]float32, PanelRows*stride)
	}
	packed = packed[:k*stride]
	nb := stride / 16
	for t := 0; t < k; t++ {
		row := p[t*stride : (t+1)*stride]
		for jb := 0; jb < nb; jb++ {
			copy(packed[(jb*k+t)*16:(jb*k+t)*16+16], row[jb*16:jb*16+16])
		}
	}
	base := unsafe.Pointer(unsafe.SliceData(packed))
	for i0 := 0; i0 < stride; i0 += 4 {
		pa0 := unsafe.Add(base, uintptr((i0/16)*k*16+i0%16)*4)
		for jb := i0 / 16; jb < nb; jb++ {
			j0 := jb * 16
			var c00, c01, c10, c11, c20, c21, c30, c31 archsimd.Float32x8
			pb := unsafe.Add(base, uintptr(jb*k*16)*4)
			pa := pa0
			for t := 0; t < k; t++ {
				b0 := archsimd.LoadFloat32x8((*[8]float32)(pb))
				b1 := archsimd.LoadFloat32x8((*[8]float32)(unsafe.Add(pb, 32)))
				a := (*[4]float32)(pa)
				a0 := archsimd.BroadcastFloat32x8(a[0])
				c00 = b0.MulAdd(a0, c00)
				c01 = b1.MulAdd(a0, c01)
				a1 := archsimd.BroadcastFloat32x8(a[1])
				c10 = b0.MulAdd(a1, c10)
				c11 = b1.MulAdd(a1, c11)
				a2 := archsimd.BroadcastFloat32x8(a[2])
				c20 = b0.MulAdd(a2, c20)
				c21 = b1.MulAdd(a2, c21)
				a3 := archsimd.BroadcastFloat32x8(a[3])
				c30 = b0.MulAdd(a3, c30)
				c31 = b1.MulAdd(a3, c31)
				pb = unsafe.Add(pb, 64)
				pa = unsafe.Add(pa, 64)
			}
			add8(g[i0*stride+j0:], c00, c01)
			add8(g[(i0+1)*stride+j0:], c10, c11)
			add8(g[(i0+2)*stride+j0:], c20, c21)
			add8(g[(i0+3)*stride+j0:], c30, c31)
		}
	}
	select {
	case packPool <- packed[:cap(packed)]:
	default:
	}
}

// add8 widens two 8-lane float32 sums and adds them into dst[0:16].
func add8(dst []float64, lo, hi archsimd.Float32x8) {
	dst = dst[:16]
	for i, v := range []archsimd.Float32x4{lo.GetLo(), lo.GetHi(), hi.GetLo(), hi.GetHi()} {
		d := (*[4]float64)(dst[4*i : 4*i+4])
		archsimd.LoadFloat64x4(d).Add(v.ConvertToFloat64()).Store(d)
	}
}
