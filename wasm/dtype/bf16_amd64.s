//go:build goexperiment.simd && amd64

#include "textflag.h"

// func decodeAVX2(src *byte, dst *float32, n int) (nonfinite int)
//
// Widens n bf16 values (n a multiple of 8) into float32 and counts those
// whose exponent is all ones (NaN, ±Inf).
TEXT ·decodeAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	VPXOR Y15, Y15, Y15
	MOVL $0x7f800000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	TESTQ CX, CX
	JZ decdone

decloop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, (DI)
	VPAND     Y14, Y0, Y1
	VPCMPEQD  Y14, Y1, Y1
	VPSUBD    Y1, Y15, Y15
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       decloop

decdone:
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

// func scanAVX2(src *byte, n int) (nonfinite int, sumsq float64)
//
// Counts the non-finite values of n bf16 values (n a multiple of 8) and
// sums the squares of the others: float32 sums in eight lanes over blocks
// of 256 values, each block's lanes added in float64.
TEXT ·scanAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VPXOR  Y15, Y15, Y15
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	MOVL $0x7f800000, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14

scanouter:
	TESTQ CX, CX
	JZ    scandone
	MOVQ  $32, R9
	CMPQ  CX, R9
	CMOVQLT CX, R9
	SUBQ  R9, CX
	VXORPS Y10, Y10, Y10

scaninner:
	VPMOVZXWD   (SI), Y0
	VPSLLD      $16, Y0, Y0
	VPAND       Y14, Y0, Y1
	VPCMPEQD    Y14, Y1, Y1
	VPSUBD      Y1, Y15, Y15
	VPANDN      Y0, Y1, Y0
	VFMADD231PS Y0, Y0, Y10
	ADDQ        $16, SI
	DECQ        R9
	JNZ         scaninner

	VCVTPS2PD    X10, Y0
	VADDPD       Y0, Y12, Y12
	VEXTRACTF128 $1, Y10, X1
	VCVTPS2PD    X1, Y1
	VADDPD       Y1, Y13, Y13
	JMP          scanouter

scandone:
	VADDPD       Y13, Y12, Y12
	VEXTRACTF128 $1, Y12, X0
	VADDPD       X0, X12, X0
	VPSHUFD      $0x4e, X0, X1
	VADDSD       X1, X0, X0
	MOVSD        X0, sumsq+24(FP)
	VEXTRACTI128 $1, Y15, X1
	VPADDD       X1, X15, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	MOVQ         AX, nonfinite+16(FP)
	VZEROUPPER
	RET
