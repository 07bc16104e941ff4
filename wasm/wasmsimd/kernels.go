package wasmsimd

// The kernels' function bodies. Parameters and locals are numbered as the
// WebAssembly function sees them (parameters first); every address is a
// byte address into the imported memory.

// scanBody is scan(p, nvec, out i32) over nvec × 8 bf16 values: it counts
// the non-finite ones (exponent bits all set) and sums the squares of the
// others, float32 sums of 64 vectors (128 values a lane) added in float64,
// and stores the f64x2 sum at out and the i32x4 counts at out+16.
func scanBody() []byte {
	const (
		pP, pN, pOut             = 0, 1, 2
		lS, lAcc, lCnt16, lCnt32 = 3, 4, 5, 6
		lBlockEnd, lEnd          = 7, 8
		lV, lMask, lW            = 9, 10, 11
	)
	var a asm
	a.get(pP)
	a.get(pN)
	a.i32(4)
	a.op(0x74, 0x6a) // i32.shl, i32.add
	a.set(lEnd)
	a.op(0x02, 0x40) // block
	a.get(pP)
	a.get(lEnd)
	a.op(0x4f, 0x0d, 0) // i32.ge_u, br_if 0
	a.op(0x03, 0x40)    // loop over blocks
	a.vconst([16]byte{})
	a.set(lS)
	a.vconst([16]byte{})
	a.set(lCnt16)
	a.blockEnd(lBlockEnd, pP, lEnd)
	a.op(0x03, 0x40) // loop over vectors
	a.get(pP)
	a.vload()
	a.set(lV)
	a.nonfinite(lV, lMask, lCnt16)
	a.get(lV)
	a.get(lMask)
	a.v(opAndNot)
	a.set(lV)
	for _, ext := range []int{opI32ExtLowI16U, opI32ExtHighI16U} {
		a.get(lV)
		a.v(ext)
		a.i32(16)
		a.v(opI32Shl)
		a.set(lW)
		a.get(lS)
		a.get(lW)
		a.get(lW)
		a.v(opF32Mul)
		a.v(opF32Add)
		a.set(lS)
	}
	a.add(pP, 16)
	a.get(pP)
	a.get(lBlockEnd)
	a.op(0x49, 0x0d, 0) // i32.lt_u, br_if 0
	a.op(0x0b)          // loop over vectors
	a.flushF32(lAcc, lS)
	a.addCounts(lCnt32, lCnt16)
	a.get(pP)
	a.get(lEnd)
	a.op(0x49, 0x0d, 0) // i32.lt_u, br_if 0 (next block)
	a.op(0x0b)          // loop over blocks
	a.op(0x0b)          // block
	a.get(pOut)
	a.get(lAcc)
	a.vstore(0)
	a.get(pOut)
	a.get(lCnt32)
	a.vstore(16)
	// locals: 3, 4, 5, 6 v128; 7, 8 i32; 9, 10, 11 v128
	return a.body(4, tV128, 2, tI32, 3, tV128)
}

// colSqBody is colsq(x, rows, r, acc i32): acc (r f32) += the squares of
// every row of X (rows × r, r a multiple of 4).
func colSqBody() []byte {
	const (
		pX, pRows, pR, pAcc       = 0, 1, 2, 3
		lP, lEnd, lQ, lRowEnd, lV = 4, 5, 6, 7, 8
	)
	var a asm
	// end = x + rows·r·4
	a.get(pX)
	a.get(pRows)
	a.get(pR)
	a.op(0x6c)
	a.i32(2)
	a.op(0x74, 0x6a)
	a.set(lEnd)
	a.get(pX)
	a.set(lP)
	a.op(0x03, 0x40) // rows
	a.get(pAcc)
	a.set(lQ)
	a.get(lP)
	a.get(pR)
	a.i32(2)
	a.op(0x74, 0x6a)
	a.set(lRowEnd)
	a.op(0x03, 0x40) // vectors of the row
	a.get(lP)
	a.vload()
	a.set(lV)
	a.get(lQ)
	a.get(lQ)
	a.vload()
	a.get(lV)
	a.get(lV)
	a.v(opF32Mul)
	a.v(opF32Add)
	a.vstore(0)
	a.add(lP, 16)
	a.add(lQ, 16)
	a.whileLt(lP, lRowEnd)
	a.whileLt(lP, lEnd)
	// locals: 4–7 i32; 8 v128
	return a.body(4, tI32, 1, tV128)
}

// rowSqBody is rowsq(a, r, n, out i32): for each row of A (r × n, n a
// multiple of 4) the sum of squares, float32 over blocks of 256 values
// added in float64, stored as an f64x2 (two partial sums) at out + 16·i.
func rowSqBody() []byte {
	const (
		pA, pR, pN, pOut                    = 0, 1, 2, 3
		lP, lRowEnd, lBlockEnd, lQ, lOutEnd = 4, 5, 6, 7, 8
		lS, lAcc, lV                        = 9, 10, 11
	)
	var a asm
	a.addr16(lOutEnd, pOut, pR)
	a.get(pA)
	a.set(lP)
	a.get(pOut)
	a.set(lQ)
	a.op(0x03, 0x40) // rows
	a.vzero(lAcc)
	a.get(lP)
	a.get(pN)
	a.i32(2)
	a.op(0x74, 0x6a)
	a.set(lRowEnd)
	a.op(0x03, 0x40) // blocks
	a.vzero(lS)
	a.blockEnd(lBlockEnd, lP, lRowEnd)
	a.op(0x03, 0x40) // vectors
	a.get(lP)
	a.vload()
	a.set(lV)
	a.get(lS)
	a.get(lV)
	a.get(lV)
	a.v(opF32Mul)
	a.v(opF32Add)
	a.set(lS)
	a.add(lP, 16)
	a.whileLt(lP, lBlockEnd)
	a.flushF32(lAcc, lS)
	a.whileLt(lP, lRowEnd)
	a.get(lQ)
	a.get(lAcc)
	a.vstore(0)
	a.add(lQ, 16)
	a.whileLt(lQ, lOutEnd)
	// locals: 4–8 i32; 9–11 v128
	return a.body(5, tI32, 3, tV128)
}

// decodeBody is decode(src, nvec, dst, out i32): nvec × 8 bf16 values to
// float32 at dst (the bits shifted up, NaN and Inf included), and the count
// of non-finite ones as an i32x4 at out.
func decodeBody() []byte {
	const (
		pSrc, pN, pDst, pOut      = 0, 1, 2, 3
		lEnd, lBlockEnd           = 4, 5
		lV, lMask, lCnt16, lCnt32 = 6, 7, 8, 9
	)
	var a asm
	a.get(pSrc)
	a.get(pN)
	a.i32(4)
	a.op(0x74, 0x6a)
	a.set(lEnd)
	a.op(0x02, 0x40) // block
	a.get(pSrc)
	a.get(lEnd)
	a.op(0x4f, 0x0d, 0)
	a.op(0x03, 0x40) // blocks of 64 vectors
	a.vzero(lCnt16)
	a.blockEnd(lBlockEnd, pSrc, lEnd)
	a.op(0x03, 0x40) // vectors
	a.get(pSrc)
	a.vload()
	a.set(lV)
	a.nonfinite(lV, lMask, lCnt16)
	for i, ext := range []int{opI32ExtLowI16U, opI32ExtHighI16U} {
		a.get(pDst)
		a.get(lV)
		a.v(ext)
		a.i32(16)
		a.v(opI32Shl)
		a.vstore(byte(16 * i))
	}
	a.add(pSrc, 16)
	a.add(pDst, 32)
	a.whileLt(pSrc, lBlockEnd)
	a.addCounts(lCnt32, lCnt16)
	a.whileLt(pSrc, lEnd)
	a.op(0x0b) // block
	a.get(pOut)
	a.get(lCnt32)
	a.vstore(0)
	// locals: 4, 5 i32; 6–9 v128
	return a.body(2, tI32, 4, tV128)
}

// dotsBody is dots(x, rows, k, w, n, dst i32): dst[i·n + j] = Σ_c
// X[i, c]·W[j, c] for X rows × k and W n × k (rows contiguous, k a
// multiple of 4, all counts ≥ 1): the product X·Wᵀ of the demo model's
// layers, one f32x4 of products at a time.
func dotsBody() []byte {
	const (
		pX, pRows, pK, pW, pN, pDst     = 0, 1, 2, 3, 4, 5
		lRowBytes, lXEnd, lWEnd, lQ, lP = 6, 7, 8, 9, 10
		lPEnd                           = 11
		lAcc                            = 12
	)
	var a asm
	a.get(pK)
	a.i32(2)
	a.op(0x74) // i32.shl
	a.set(lRowBytes)
	a.get(pX)
	a.get(pRows)
	a.get(lRowBytes)
	a.op(0x6c, 0x6a) // i32.mul, i32.add
	a.set(lXEnd)
	a.get(pW)
	a.get(pN)
	a.get(lRowBytes)
	a.op(0x6c, 0x6a)
	a.set(lWEnd)
	a.op(0x03, 0x40) // rows of X
	a.get(pW)
	a.set(lQ)
	a.get(pX)
	a.get(lRowBytes)
	a.op(0x6a)
	a.set(lPEnd)
	a.op(0x03, 0x40) // rows of W
	a.vzero(lAcc)
	a.get(pX)
	a.set(lP)
	a.op(0x03, 0x40) // the row: acc += x·w, four at a time
	a.get(lAcc)
	a.get(lP)
	a.vload()
	a.get(lQ)
	a.vload()
	a.v(opF32Mul)
	a.v(opF32Add)
	a.set(lAcc)
	a.add(lP, 16)
	a.add(lQ, 16)
	a.whileLt(lP, lPEnd)
	// dst = the four lanes' sum
	a.get(pDst)
	for lane := byte(0); lane < 4; lane++ {
		a.get(lAcc)
		a.v(opF32ExtractLane, lane)
		if lane > 0 {
			a.op(0x92) // f32.add
		}
	}
	a.op(0x38, 2, 0) // f32.store
	a.add(pDst, 4)
	a.whileLt(lQ, lWEnd)
	a.get(pX)
	a.get(lRowBytes)
	a.op(0x6a)
	a.set(pX)
	a.whileLt(pX, lXEnd)
	// locals: 6–11 i32; 12 v128
	return a.body(6, tI32, 1, tV128)
}
