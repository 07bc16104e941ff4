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

// func scanAVX512(src *byte, n int) (nonfinite int, sumsq float64)
//
// scanAVX2 for AVX-512 (F and BW): n a multiple of 64. Each step reads 64
// values (two 64-byte loads); a value whose exponent is all ones is
// counted (word compare into a mask, popcount) and zeroed (masked move),
// the even and odd values of each load are widened in place (shift, mask)
// and their squares summed in four float32 accumulators — four chains, so
// that the FMA's latency is not the bound. Every 8 steps (512 values) the
// accumulators are added in float64.
TEXT ·scanAVX512(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $6, CX
	XORQ R10, R10
	VPXORQ Z20, Z20, Z20
	VPXORQ Z21, Z21, Z21
	MOVL $0x7f807f80, AX
	VPBROADCASTD AX, Z30
	MOVL $0xffff0000, AX
	VPBROADCASTD AX, Z31

scan5outer:
	TESTQ CX, CX
	JZ    scan5done
	MOVQ  $8, R9
	CMPQ  CX, R9
	CMOVQLT CX, R9
	SUBQ  R9, CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

scan5inner:
	VMOVDQU32   (SI), Z4
	VMOVDQU32   64(SI), Z5
	VPANDD      Z30, Z4, Z6
	VPCMPEQW    Z30, Z6, K1
	VPANDD      Z30, Z5, Z7
	VPCMPEQW    Z30, Z7, K2
	KMOVD       K1, AX
	POPCNTL     AX, AX
	ADDQ        AX, R10
	KMOVD       K2, BX
	POPCNTL     BX, BX
	ADDQ        BX, R10
	KNOTD       K1, K1
	KNOTD       K2, K2
	VMOVDQU16.Z Z4, K1, Z4
	VMOVDQU16.Z Z5, K2, Z5
	VPSLLD      $16, Z4, Z6
	VPANDD      Z31, Z4, Z7
	VFMADD231PS Z6, Z6, Z0
	VFMADD231PS Z7, Z7, Z1
	VPSLLD      $16, Z5, Z8
	VPANDD      Z31, Z5, Z9
	VFMADD231PS Z8, Z8, Z2
	VFMADD231PS Z9, Z9, Z3
	ADDQ        $128, SI
	DECQ        R9
	JNZ         scan5inner

	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VCVTPS2PD     Y0, Z10
	VEXTRACTF32X8 $1, Z0, Y11
	VCVTPS2PD     Y11, Z11
	VADDPD        Z10, Z20, Z20
	VADDPD        Z11, Z21, Z21
	JMP           scan5outer

scan5done:
	VADDPD        Z21, Z20, Z20
	VEXTRACTF64X4 $1, Z20, Y1
	VADDPD        Y1, Y20, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPD        X1, X0, X0
	VPSHUFD       $0x4e, X0, X1
	VADDSD        X1, X0, X0
	MOVSD         X0, sumsq+24(FP)
	MOVQ          R10, nonfinite+16(FP)
	VZEROUPPER
	RET
