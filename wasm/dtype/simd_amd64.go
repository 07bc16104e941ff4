//go:build goexperiment.simd && amd64

package dtype

import (
	"simd/archsimd"
	"unsafe"
)

// The native bf16 kernels (Go assembly, bf16_amd64.s), built with
// GOEXPERIMENT=simd on amd64 and installed at start-up when the CPU has
// AVX2 (the scan also AVX-512, preferred) and CheckScanKernel /
// CheckDecodeKernel accept them.

func init() {
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		_ = ScanKernels.Try("avx2", scanBF16AVX2, CheckScanKernel)
		_ = DecodeKernels.Try("avx2", decodeBF16AVX2, CheckDecodeKernel)
	}
	if archsimd.X86.AVX512() {
		_ = ScanKernels.Try("avx512", scanBF16AVX512, CheckScanKernel)
	}
}

//go:noescape
func decodeAVX2(src *byte, dst *float32, n int) (nonfinite int)

//go:noescape
func scanAVX2(src *byte, n int) (nonfinite int, sumsq float64)

// decodeBF16AVX2 is a BF16Kernel: len(dst) values, a multiple of 8.
func decodeBF16AVX2(src []byte, dst []float32) int {
	n := len(dst) &^ 7
	if n == 0 {
		return 0
	}
	if len(src) < 2*n {
		panic("dtype: decodeBF16AVX2: src too short")
	}
	return decodeAVX2(unsafe.SliceData(src), unsafe.SliceData(dst), n)
}

//go:noescape
func scanAVX512(src *byte, n int) (nonfinite int, sumsq float64)

// scanBF16AVX512 is a ScanKernel: whole steps of 64 values in the AVX-512
// loop (scanAVX512), the rest (fewer than 64, a multiple of 8) in the AVX2
// one.
func scanBF16AVX512(b []byte) (int, float64) {
	n := len(b) / 2 &^ 7
	n64 := n &^ 63
	var nf int
	var ss float64
	if n64 > 0 {
		nf, ss = scanAVX512(unsafe.SliceData(b), n64)
	}
	if n64 < n {
		nf2, ss2 := scanAVX2(&b[2*n64], n-n64)
		nf, ss = nf+nf2, ss+ss2
	}
	return nf, ss
}

// scanBF16AVX2 is a ScanKernel: len(b) a multiple of 16 bytes.
func scanBF16AVX2(b []byte) (int, float64) {
	n := len(b) / 2 &^ 7
	if n == 0 {
		return 0, 0
	}
	return scanAVX2(unsafe.SliceData(b), n)
}
