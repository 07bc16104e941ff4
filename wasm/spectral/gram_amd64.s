//go:build goexperiment.simd && amd64

#include "textflag.h"

// func tileAVX2(a, b *float32, k int, gp *float64, gstride int)
//
// One 4 × 16 tile of Pᵀ·P from a packed panel (see Gram): a points at
// columns i0..i0+3 of row 0 (within a block of 16), b at block jb's row 0;
// row t of each is 64 bytes further. The sixteen float32 sums over the k
// rows (k ≥ 1) of a[t][u]·b[t][0..15] are in Y0–Y7 (two per u), then
// widened and added into gp[u·gstride + 0..15] in float64.
TEXT ·tileAVX2(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ k+16(FP), CX
	MOVQ gp+24(FP), DX
	MOVQ gstride+32(FP), R8
	SHLQ $3, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

loop:
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VBROADCASTSS (SI), Y10
	VBROADCASTSS 4(SI), Y11
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS 8(SI), Y12
	VBROADCASTSS 12(SI), Y13
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $64, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          loop

	// Row u: Y(2u) holds columns 0–7, Y(2u+1) columns 8–15.
#define ADDROW(lo, ylo, hi, yhi) \
	VCVTPS2PD    lo, Y8 \
	VEXTRACTF128 $1, ylo, X9 \
	VCVTPS2PD    X9, Y9 \
	VADDPD       (DX), Y8, Y8 \
	VADDPD       32(DX), Y9, Y9 \
	VMOVUPD      Y8, (DX) \
	VMOVUPD      Y9, 32(DX) \
	VCVTPS2PD    hi, Y10 \
	VEXTRACTF128 $1, yhi, X11 \
	VCVTPS2PD    X11, Y11 \
	VADDPD       64(DX), Y10, Y10 \
	VADDPD       96(DX), Y11, Y11 \
	VMOVUPD      Y10, 64(DX) \
	VMOVUPD      Y11, 96(DX) \
	ADDQ         R8, DX

	ADDROW(X0, Y0, X1, Y1)
	ADDROW(X2, Y2, X3, Y3)
	ADDROW(X4, Y4, X5, Y5)
	ADDROW(X6, Y6, X7, Y7)
	VZEROUPPER
	RET
