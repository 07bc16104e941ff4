// Shared by the 16 × 16 tile kernels (gram_amd64.s, gram_bf16_amd64.s).

// ZERO16 clears the sixteen accumulators Z0–Z15.
#define ZERO16 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15

// ADDROW16 adds row u of a tile into gp (DX), then steps DX to the next
// row (R8 bytes): Zu's low 8 lanes (Yu) and high 8 lanes widened to
// float64. Z18 and Z19 are scratch.
#define ADDROW16(z, y) \
	VCVTPS2PD     y, Z18 \
	VEXTRACTF32X8 $1, z, Y19 \
	VCVTPS2PD     Y19, Z19 \
	VADDPD        (DX), Z18, Z18 \
	VADDPD        64(DX), Z19, Z19 \
	VMOVUPD       Z18, (DX) \
	VMOVUPD       Z19, 64(DX) \
	ADDQ          R8, DX

// SUM16 adds the whole tile, Z0–Z15, into gp.
#define SUM16 \
	ADDROW16(Z0, Y0) \
	ADDROW16(Z1, Y1) \
	ADDROW16(Z2, Y2) \
	ADDROW16(Z3, Y3) \
	ADDROW16(Z4, Y4) \
	ADDROW16(Z5, Y5) \
	ADDROW16(Z6, Y6) \
	ADDROW16(Z7, Y7) \
	ADDROW16(Z8, Y8) \
	ADDROW16(Z9, Y9) \
	ADDROW16(Z10, Y10) \
	ADDROW16(Z11, Y11) \
	ADDROW16(Z12, Y12) \
	ADDROW16(Z13, Y13) \
	ADDROW16(Z14, Y14) \
	ADDROW16(Z15, Y15)
