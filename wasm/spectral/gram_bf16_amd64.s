//go:build goexperiment.simd && amd64

#include "textflag.h"
#include "gram_tile_amd64.h"

// The bf16 dot-product Gram kernel (AVX512_BF16) and its packer. The Go
// assembler has no AVX512_BF16 mnemonics, so VDPBF16PS is written as its
// bytes: EVEX 62 P0 P1 P2, opcode 52 (F3 0F38, W0), ModRM, disp8. Here it
// is always the form VDPBF16PS m32bcst(SI)+disp8·4, Zb, Zacc with Zb Z16 or
// Z17 and Zacc one of Z0–Z15: P0 = F2 (Zacc < 8) or 72 (R̄ clear: Zacc ≥
// 8), P1 = 7E (vvvv̄ for Z16) or 76 (Z17), P2 = 50 (512 bits, broadcast,
// V̄′ clear: Zb ≥ 16), ModRM = 01 acc&7 110 (disp8, [SI]), the displacement
// compressed by the element size (4). Checked against GNU as (objdump).
#define DPBF16(p0, p1, modrm, d8) BYTE $0x62; BYTE p0; BYTE p1; BYTE $0x50; BYTE $0x52; BYTE modrm; BYTE d8

// func cpuidBF16() bool
//
// CPUID leaf 7 subleaf 1, EAX bit 5: AVX512_BF16 (the caller checks
// AVX-512F and the OS's saving of the ZMM state). Subleaf 1 exists when
// leaf 7 subleaf 0 gives EAX ≥ 1.
TEXT ·cpuidBF16(SB), NOSPLIT, $0-1
	MOVL $0, AX
	CPUID
	CMPL AX, $7
	JLT  no
	MOVL $7, AX
	MOVL $0, CX
	CPUID
	CMPL AX, $1
	JLT  no
	MOVL $7, AX
	MOVL $1, CX
	CPUID
	SHRL $5, AX
	ANDL $1, AX
	MOVB AX, ret+0(FP)
	RET
no:
	MOVB $0, ret+0(FP)
	RET

// func packBF16(p *float32, dst *uint32, pairs, nblk int) (bad int)
//
// Packs rows 0..2·pairs−1 of a packed panel (see Gram) as bf16 pairs: in
// each of nblk blocks, pair s's 16 words are row 2s's bf16 (low half) and
// row 2s+1's (high half) of the block's 16 columns, at dst + block·2048 +
// s·64 bytes. bad is nonzero when a value is not exactly a bf16 (low 16
// bits set), or its magnitude is nonzero and under 2⁻⁴⁰, or 2⁶⁰ or more
// (infinities and NaNs too): outside that range VDPBF16PS's flushing of
// subnormals or an overflow could differ from the float32 kernel.
TEXT ·packBF16(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ dst+8(FP), DI
	MOVQ pairs+16(FP), CX
	MOVQ nblk+24(FP), DX
	VPXORD     Z20, Z20, Z20    // OR of every value
	VPTERNLOGD $0xff, Z21, Z21, Z21 // min of |x|−1 (unsigned; 0 → all ones)
	VPXORD     Z25, Z25, Z25    // max of |x|
	VPTERNLOGD $0xff, Z24, Z24, Z24 // −1
	MOVL       $0xffff0000, AX
	VPBROADCASTD AX, Z22
	MOVL       $0x7fffffff, AX
	VPBROADCASTD AX, Z23
	TESTQ      CX, CX
	JZ         packdone
	TESTQ      DX, DX
	JZ         packdone

packblk:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R9

packpair:
	VMOVDQU32 (R10), Z0
	VMOVDQU32 64(R10), Z1
	VPSRLD    $16, Z0, Z2
	VPANDD    Z22, Z1, Z3
	VPORD     Z2, Z3, Z3
	VMOVDQU32 Z3, (R11)
	VPORD     Z0, Z20, Z20
	VPORD     Z1, Z20, Z20
	VPANDD    Z23, Z0, Z4
	VPANDD    Z23, Z1, Z5
	VPMAXUD   Z4, Z25, Z25
	VPMAXUD   Z5, Z25, Z25
	VPADDD    Z24, Z4, Z4
	VPADDD    Z24, Z5, Z5
	VPMINUD   Z4, Z21, Z21
	VPMINUD   Z5, Z21, Z21
	ADDQ      $128, R10
	ADDQ      $64, R11
	DECQ      R9
	JNZ       packpair
	ADDQ      $4096, SI
	ADDQ      $2048, DI
	DECQ      DX
	JNZ       packblk

packdone:
	MOVL         $0xffff, AX
	VPBROADCASTD AX, Z26
	VPTESTMD     Z26, Z20, K1       // low halves set
	MOVL         $0x2b7fffff, AX    // 2⁻⁴⁰'s bits, less one
	VPBROADCASTD AX, Z27
	VPCMPUD      $1, Z27, Z21, K2   // min(|x|−1) < 2⁻⁴⁰−1: a tiny nonzero
	MOVL         $0x5d7fffff, AX    // 2⁶⁰'s bits, less one
	VPBROADCASTD AX, Z28
	VPCMPUD      $6, Z28, Z25, K3   // max |x| > 2⁶⁰−1 (NLE)
	KORW         K1, K2, K1
	KORW         K1, K3, K1
	KMOVW        K1, AX
	MOVQ         AX, bad+32(FP)
	VZEROUPPER
	RET

// STEPBF16 is one pair of rows at SI and DI (Z16 takes b's; the sixteen
// VDPBF16PS.BCST 4u(SI), Z16, Zu, u = 0..15, as bytes).
#define STEPBF16 \
	VMOVUPS 0(DI), Z16 \
	DPBF16($0xf2, $0x7e, $0x46, $0x00) \
	DPBF16($0xf2, $0x7e, $0x4e, $0x01) \
	DPBF16($0xf2, $0x7e, $0x56, $0x02) \
	DPBF16($0xf2, $0x7e, $0x5e, $0x03) \
	DPBF16($0xf2, $0x7e, $0x66, $0x04) \
	DPBF16($0xf2, $0x7e, $0x6e, $0x05) \
	DPBF16($0xf2, $0x7e, $0x76, $0x06) \
	DPBF16($0xf2, $0x7e, $0x7e, $0x07) \
	DPBF16($0x72, $0x7e, $0x46, $0x08) \
	DPBF16($0x72, $0x7e, $0x4e, $0x09) \
	DPBF16($0x72, $0x7e, $0x56, $0x0a) \
	DPBF16($0x72, $0x7e, $0x5e, $0x0b) \
	DPBF16($0x72, $0x7e, $0x66, $0x0c) \
	DPBF16($0x72, $0x7e, $0x6e, $0x0d) \
	DPBF16($0x72, $0x7e, $0x76, $0x0e) \
	DPBF16($0x72, $0x7e, $0x7e, $0x0f)

// func tile16BF16(a, b *uint32, pairs int, gp *float64, gstride int)
//
// One 16 × 16 tile of Pᵀ·P from bf16 pairs (packBF16): a points at pair 0
// of block ib, b at pair 0 of block jb; pair s of each is 64 bytes
// further. Sixteen 16-lane float32 accumulators Z0–Z15 as tile16AVX512,
// but each VDPBF16PS adds two rows' exact products (bf16 × bf16), so a
// pair of rows costs what one row does there. Pairs are taken two at a
// time. The sums are widened and added into gp[u·gstride + 0..15].
TEXT ·tile16BF16(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ pairs+16(FP), CX
	MOVQ gp+24(FP), DX
	MOVQ gstride+32(FP), R8
	SHLQ $3, R8
	ZERO16

	MOVQ CX, R9
	SHRQ $1, R9
	JZ   oddbf

pairbf:
	STEPBF16
	VMOVUPS 64(DI), Z17
	DPBF16($0xf2, $0x76, $0x46, $0x10) // VDPBF16PS.BCST 64(SI), Z17, Z0
	DPBF16($0xf2, $0x76, $0x4e, $0x11) // VDPBF16PS.BCST 68(SI), Z17, Z1
	DPBF16($0xf2, $0x76, $0x56, $0x12) // VDPBF16PS.BCST 72(SI), Z17, Z2
	DPBF16($0xf2, $0x76, $0x5e, $0x13) // VDPBF16PS.BCST 76(SI), Z17, Z3
	DPBF16($0xf2, $0x76, $0x66, $0x14) // VDPBF16PS.BCST 80(SI), Z17, Z4
	DPBF16($0xf2, $0x76, $0x6e, $0x15) // VDPBF16PS.BCST 84(SI), Z17, Z5
	DPBF16($0xf2, $0x76, $0x76, $0x16) // VDPBF16PS.BCST 88(SI), Z17, Z6
	DPBF16($0xf2, $0x76, $0x7e, $0x17) // VDPBF16PS.BCST 92(SI), Z17, Z7
	DPBF16($0x72, $0x76, $0x46, $0x18) // VDPBF16PS.BCST 96(SI), Z17, Z8
	DPBF16($0x72, $0x76, $0x4e, $0x19) // VDPBF16PS.BCST 100(SI), Z17, Z9
	DPBF16($0x72, $0x76, $0x56, $0x1a) // VDPBF16PS.BCST 104(SI), Z17, Z10
	DPBF16($0x72, $0x76, $0x5e, $0x1b) // VDPBF16PS.BCST 108(SI), Z17, Z11
	DPBF16($0x72, $0x76, $0x66, $0x1c) // VDPBF16PS.BCST 112(SI), Z17, Z12
	DPBF16($0x72, $0x76, $0x6e, $0x1d) // VDPBF16PS.BCST 116(SI), Z17, Z13
	DPBF16($0x72, $0x76, $0x76, $0x1e) // VDPBF16PS.BCST 120(SI), Z17, Z14
	DPBF16($0x72, $0x76, $0x7e, $0x1f) // VDPBF16PS.BCST 124(SI), Z17, Z15
	ADDQ $128, SI
	ADDQ $128, DI
	DECQ R9
	JNZ  pairbf

oddbf:
	TESTQ $1, CX
	JZ    sumbf
	STEPBF16

sumbf:
	SUM16
	VZEROUPPER
	RET
