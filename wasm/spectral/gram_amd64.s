//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "gram_tile_amd64.h"

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

	// Row u: Y(2u) holds columns 0–7, Y(2u+1) columns 8–15; Y12–Y15 are
	// scratch (tile6AVX2 keeps sums in Y8–Y11).
#define ADDROW(lo, ylo, hi, yhi) \
	VCVTPS2PD    lo, Y12 \
	VEXTRACTF128 $1, ylo, X13 \
	VCVTPS2PD    X13, Y13 \
	VADDPD       (DX), Y12, Y12 \
	VADDPD       32(DX), Y13, Y13 \
	VMOVUPD      Y12, (DX) \
	VMOVUPD      Y13, 32(DX) \
	VCVTPS2PD    hi, Y14 \
	VEXTRACTF128 $1, yhi, X15 \
	VCVTPS2PD    X15, Y15 \
	VADDPD       64(DX), Y14, Y14 \
	VADDPD       96(DX), Y15, Y15 \
	VMOVUPD      Y14, 64(DX) \
	VMOVUPD      Y15, 96(DX) \
	ADDQ         R8, DX

	ADDROW(X0, Y0, X1, Y1)
	ADDROW(X2, Y2, X3, Y3)
	ADDROW(X4, Y4, X5, Y5)
	ADDROW(X6, Y6, X7, Y7)
	VZEROUPPER
	RET

// func tile6AVX2(a, b *float32, k int, gp *float64, gstride int)
//
// One 6 × 16 tile, as tileAVX2 but for columns i0..i0+5 of the block:
// twelve accumulators (Y0–Y11), two loads and six broadcasts for twelve
// multiply-adds per row, the FMA units' throughput rather than their
// latency or the loads being the bound. Rows are taken two at a time
// (the loop's own instructions would otherwise be a fifth of the work).
TEXT ·tile6AVX2(SB), NOSPLIT, $0-40
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
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

#define STEP6(off) \
	VMOVUPS      off(DI), Y12 \
	VMOVUPS      off+32(DI), Y13 \
	VBROADCASTSS off(SI), Y14 \
	VFMADD231PS  Y12, Y14, Y0 \
	VFMADD231PS  Y13, Y14, Y1 \
	VBROADCASTSS off+4(SI), Y15 \
	VFMADD231PS  Y12, Y15, Y2 \
	VFMADD231PS  Y13, Y15, Y3 \
	VBROADCASTSS off+8(SI), Y14 \
	VFMADD231PS  Y12, Y14, Y4 \
	VFMADD231PS  Y13, Y14, Y5 \
	VBROADCASTSS off+12(SI), Y15 \
	VFMADD231PS  Y12, Y15, Y6 \
	VFMADD231PS  Y13, Y15, Y7 \
	VBROADCASTSS off+16(SI), Y14 \
	VFMADD231PS  Y12, Y14, Y8 \
	VFMADD231PS  Y13, Y14, Y9 \
	VBROADCASTSS off+20(SI), Y15 \
	VFMADD231PS  Y12, Y15, Y10 \
	VFMADD231PS  Y13, Y15, Y11

	MOVQ CX, R9
	SHRQ $1, R9
	JZ   odd6

pair6:
	STEP6(0)
	STEP6(64)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ R9
	JNZ  pair6

odd6:
	TESTQ $1, CX
	JZ    sum6
	STEP6(0)

sum6:
	ADDROW(X0, Y0, X1, Y1)
	ADDROW(X2, Y2, X3, Y3)
	ADDROW(X4, Y4, X5, Y5)
	ADDROW(X6, Y6, X7, Y7)
	ADDROW(X8, Y8, X9, Y9)
	ADDROW(X10, Y10, X11, Y11)
	VZEROUPPER
	RET

// func columnsAVX2(src *byte, pitch int, dst *float32, n8 int) (nonfinite int)
//
// Widens an 8 × 8·n8 block of bf16 values (8 rows, pitch bytes apart) into
// a packed panel transposed: column t of the block (8 values, one per row)
// goes to dst + t·64 bytes, 8 contiguous floats (rows i0..i0+7 of panel
// row t). Counts the values whose exponent is all ones. Each group of 8
// columns is an 8 × 8 transpose in registers (unpack, shuffle, permute).
TEXT ·columnsAVX2(SB), NOSPLIT, $0-40
	MOVQ src+0(FP), R10
	MOVQ pitch+8(FP), R11
	MOVQ dst+16(FP), DI
	MOVQ n8+24(FP), CX
	LEAQ (R11)(R11*2), R12
	LEAQ (R10)(R11*4), R13
	VPXOR Y15, Y15, Y15
	MOVL $0x7f800000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	TESTQ CX, CX
	JZ coldone

#define LOADROW(addr, y) \
	VPMOVZXWD addr, y \
	VPSLLD    $16, y, y \
	VPAND     Y14, y, Y8 \
	VPCMPEQD  Y14, Y8, Y8 \
	VPSUBD    Y8, Y15, Y15

colloop:
	LOADROW((R10), Y0)
	LOADROW((R10)(R11*1), Y1)
	LOADROW((R10)(R11*2), Y2)
	LOADROW((R10)(R12*1), Y3)
	LOADROW((R13), Y4)
	LOADROW((R13)(R11*1), Y5)
	LOADROW((R13)(R11*2), Y6)
	LOADROW((R13)(R12*1), Y7)
	// t0..t7 = Y8 Y9 Y0 Y1 Y2 Y3 Y4 Y5
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y0
	VUNPCKHPS Y3, Y2, Y1
	VUNPCKLPS Y5, Y4, Y2
	VUNPCKHPS Y5, Y4, Y3
	VUNPCKLPS Y7, Y6, Y4
	VUNPCKHPS Y7, Y6, Y5
	// s0..s7 = Y6 Y7 Y8 Y0 Y9 Y1 Y2 Y4
	VSHUFPS $0x44, Y0, Y8, Y6
	VSHUFPS $0xEE, Y0, Y8, Y7
	VSHUFPS $0x44, Y1, Y9, Y8
	VSHUFPS $0xEE, Y1, Y9, Y0
	VSHUFPS $0x44, Y4, Y2, Y9
	VSHUFPS $0xEE, Y4, Y2, Y1
	VSHUFPS $0x44, Y5, Y3, Y2
	VSHUFPS $0xEE, Y5, Y3, Y4
	// columns 0..7
	VPERM2F128 $0x20, Y9, Y6, Y3
	VPERM2F128 $0x31, Y9, Y6, Y5
	VPERM2F128 $0x20, Y1, Y7, Y10
	VPERM2F128 $0x31, Y1, Y7, Y11
	VPERM2F128 $0x20, Y2, Y8, Y12
	VPERM2F128 $0x31, Y2, Y8, Y13
	VPERM2F128 $0x20, Y4, Y0, Y6
	VPERM2F128 $0x31, Y4, Y0, Y7
	VMOVUPS Y3, (DI)
	VMOVUPS Y10, 64(DI)
	VMOVUPS Y12, 128(DI)
	VMOVUPS Y6, 192(DI)
	VMOVUPS Y5, 256(DI)
	VMOVUPS Y11, 320(DI)
	VMOVUPS Y13, 384(DI)
	VMOVUPS Y7, 448(DI)
	ADDQ $16, R10
	ADDQ $16, R13
	ADDQ $512, DI
	DECQ CX
	JNZ  colloop

coldone:
	VEXTRACTI128 $1, Y15, X1
	VPADDD       X1, X15, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	MOVQ         AX, nonfinite+32(FP)
	VZEROUPPER
	RET

// func rowAVX2(src *byte, dst *float32, nblk int) (nonfinite int)
//
// Widens 16·nblk bf16 values (one row of the panel) into a packed panel:
// block b's 16 values to dst + b·4096 bytes (the next block of 16 columns,
// PanelRows·16 floats on). Counts the values whose exponent is all ones.
TEXT ·rowAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ nblk+16(FP), CX
	VPXOR Y15, Y15, Y15
	MOVL $0x7f800000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	TESTQ CX, CX
	JZ rowdone

rowloop:
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPSLLD    $16, Y0, Y0
	VPSLLD    $16, Y1, Y1
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	VPAND     Y14, Y0, Y2
	VPAND     Y14, Y1, Y3
	VPCMPEQD  Y14, Y2, Y2
	VPCMPEQD  Y14, Y3, Y3
	VPSUBD    Y2, Y15, Y15
	VPSUBD    Y3, Y15, Y15
	ADDQ      $32, SI
	ADDQ      $4096, DI
	DECQ      CX
	JNZ       rowloop

rowdone:
	VEXTRACTI128 $1, Y15, X1
	VPADDD       X1, X15, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	MOVQ         AX, nonfinite+24(FP)
	VZEROUPPER
	RET

// func tile16AVX512(a, b *float32, k int, gp *float64, gstride int)
//
// One 16 × 16 tile of Pᵀ·P (AVX-512F): a points at row 0 of block ib, b at
// row 0 of block jb; row t of each is 64 bytes further. Sixteen 16-lane
// float32 accumulators Z0–Z15 (Zu: column i0+u against the 16 columns of
// block jb); per row one load of b and sixteen multiply-adds whose a[t][u]
// is broadcast from memory by the FMA itself ({1to16}), so the FMA units'
// throughput is the bound, not the loads. Rows are taken two at a time.
// The sums are widened and added into gp[u·gstride + 0..15] in float64.
TEXT ·tile16AVX512(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ k+16(FP), CX
	MOVQ gp+24(FP), DX
	MOVQ gstride+32(FP), R8
	SHLQ $3, R8
	ZERO16

#define STEP16(off, zb) \
	VMOVUPS          off(DI), zb \
	VFMADD231PS.BCST off(SI), zb, Z0 \
	VFMADD231PS.BCST off+4(SI), zb, Z1 \
	VFMADD231PS.BCST off+8(SI), zb, Z2 \
	VFMADD231PS.BCST off+12(SI), zb, Z3 \
	VFMADD231PS.BCST off+16(SI), zb, Z4 \
	VFMADD231PS.BCST off+20(SI), zb, Z5 \
	VFMADD231PS.BCST off+24(SI), zb, Z6 \
	VFMADD231PS.BCST off+28(SI), zb, Z7 \
	VFMADD231PS.BCST off+32(SI), zb, Z8 \
	VFMADD231PS.BCST off+36(SI), zb, Z9 \
	VFMADD231PS.BCST off+40(SI), zb, Z10 \
	VFMADD231PS.BCST off+44(SI), zb, Z11 \
	VFMADD231PS.BCST off+48(SI), zb, Z12 \
	VFMADD231PS.BCST off+52(SI), zb, Z13 \
	VFMADD231PS.BCST off+56(SI), zb, Z14 \
	VFMADD231PS.BCST off+60(SI), zb, Z15

	MOVQ CX, R9
	SHRQ $1, R9
	JZ   odd16

pair16:
	STEP16(0, Z16)
	STEP16(64, Z17)
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ R9
	JNZ  pair16

odd16:
	TESTQ $1, CX
	JZ    sum16
	STEP16(0, Z16)

sum16:
	SUM16
	VZEROUPPER
	RET
