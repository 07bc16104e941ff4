package wasmsimd

// The kernels' function bodies. Parameters and locals are numbered as the
// WebAssembly function sees them (parameters first); every address is a
// byte address into the imported memory.

// apply4Body is apply4(x, rows, r, w, acc i32), rows and r even: for each
// pair of rows x, x' of X, u = Σ_c x_c·w_c and u' likewise (w and acc rows
// are one f32x4), then acc_c += x_c·u + x'_c·u'. The sums u, u' run as
// four chains, over the even and the odd columns, added at the end: an
// add's (or a fused multiply-add's) latency is four cycles on current x86,
// and two chains left the kernel waiting on it.
func apply4Body(fused bool) []byte {
	const (
		pX, pRows, pR, pW, pAcc = 0, 1, 2, 3, 4
		lP, lRowBytes, lXEnd    = 5, 6, 7
		lQ, lP2                 = 8, 9
		lU, lU2, lWc            = 10, 11, 12
		lUo, lU2o, lWc1         = 13, 14, 15 // the odd columns' sums, w_{c+1}
	)
	a := asm{fused: fused}
	// rowBytes = r << 2; xEnd = x + rows·rowBytes
	a.get(pR)
	a.i32(2)
	a.op(0x74) // i32.shl
	a.set(lRowBytes)
	a.get(pX)
	a.get(pRows)
	a.get(lRowBytes)
	a.op(0x6c, 0x6a) // i32.mul, i32.add
	a.set(lXEnd)
	a.op(0x02, 0x40) // block
	a.get(pX)
	a.get(lXEnd)
	a.op(0x4f, 0x0d, 0) // i32.ge_u, br_if 0
	a.op(0x03, 0x40)    // loop over pairs of rows
	for pass := 0; pass < 2; pass++ {
		a.get(pX)
		a.set(lP)
		a.get(pX)
		a.get(lRowBytes)
		a.op(0x6a)
		a.set(lP2)
		if pass == 0 {
			a.get(pW)
			for _, l := range []byte{lU, lU2, lUo, lU2o} {
				a.vzero(l)
			}
		} else {
			a.get(pAcc)
		}
		a.set(lQ)
		a.op(0x03, 0x40) // over the row
		if pass == 0 {
			// columns c, c+1: u += splat(x_c)·w_c, u_o += splat(x_{c+1})·w_{c+1},
			// and u', u'_o likewise
			a.vloadAt(lQ, 0)
			a.set(lWc)
			a.vloadAt(lQ, 16)
			a.set(lWc1)
			for _, ch := range [][4]byte{{lU, lP, 0, lWc}, {lU2, lP2, 0, lWc}, {lUo, lP, 4, lWc1}, {lU2o, lP2, 4, lWc1}} {
				acc, p, off, w := ch[0], ch[1], ch[2], ch[3]
				a.mulAdd(func() { a.get(acc) }, func() { a.vsplatLoadAt(p, off) }, func() { a.get(w) })
				a.set(acc)
			}
			a.add(lP, 8)
			a.add(lP2, 8)
			a.add(lQ, 32)
		} else {
			// acc_c += splat(x_c)·u + splat(x'_c)·u'
			a.get(lQ)
			a.mulAdd(func() {
				a.mulAdd(func() { a.get(lQ); a.vload() }, func() { a.vsplatLoad(lP) }, func() { a.get(lU) })
			}, func() { a.vsplatLoad(lP2) }, func() { a.get(lU2) })
			a.vstore(0)
			a.add(lP, 4)
			a.add(lP2, 4)
			a.add(lQ, 16)
		}
		a.get(lP)
		a.get(pX)
		a.get(lRowBytes)
		a.op(0x6a, 0x49, 0x0d, 0, 0x0b) // i32.add, i32.lt_u, br_if 0, end
		if pass == 0 {
			// u = u_even + u_odd, u' likewise
			for _, l := range []byte{lU, lU2} {
				a.get(l)
				a.get(l + 3)
				a.v(opF32Add)
				a.set(l)
			}
		}
	}
	// two rows on
	a.get(pX)
	a.get(lRowBytes)
	a.i32(1)
	a.op(0x74, 0x6a, 0x22, pX) // i32.shl, i32.add, local.tee x
	a.get(lXEnd)
	a.op(0x49, 0x0d, 0) // i32.lt_u, br_if 0 (next pair)
	a.op(0x0b)          // loop
	a.op(0x0b)          // block
	// locals: 5–9 i32; 10–15 v128
	return a.body(5, tI32, 6, tV128)
}

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

// apply4ColsBody is apply4cols(a, r, stride, cols, w, t, acc i32): a points
// at A[0, j0], rows stride bytes apart, r a multiple of 4; t (cols f32x4) =
// Σ_i A[i, ·]·w_i, then acc_i += Σ_j A[i, j]·t_j, both summed in row order
// (ApplyColsPortable's sums). Rows go in fours: each t_j is loaded and
// stored once for four rows, and four row sums y are in flight at once
// (each a chain of adds over the columns).
func apply4ColsBody(fused bool) []byte {
	const (
		pA, pR, pStride, pCols, pW, pT, pAcc = 0, 1, 2, 3, 4, 5, 6
		lI, lQ, lTEnd, lRowPtr, lX           = 7, 8, 9, 10, 11
		lP                                   = 12 // 12–15: the four rows' pointers
		lWi                                  = 16 // 16–19: their w_i
		lY                                   = 20 // 20–23: their sums
		lTj                                  = 24
	)
	a := asm{fused: fused}
	// tEnd = t + cols·16; t = 0
	a.addr16(lTEnd, pT, pCols)
	a.get(pT)
	a.set(lQ)
	a.op(0x03, 0x40)
	a.get(lQ)
	a.vconst([16]byte{})
	a.vstore(0)
	a.add(lQ, 16)
	a.whileLt(lQ, lTEnd)
	for pass := 0; pass < 2; pass++ {
		a.i32(0)
		a.set(lI)
		a.get(pA)
		a.set(lRowPtr)
		a.op(0x03, 0x40) // groups of four rows
		a.get(lRowPtr)
		a.set(lP)
		for k := byte(1); k < 4; k++ {
			a.get(lP + k - 1)
			a.get(pStride)
			a.op(0x6a)
			a.set(lP + k)
		}
		a.get(pT)
		a.set(lQ)
		if pass == 0 {
			a.addr16(lX, pW, lI)
			for k := byte(0); k < 4; k++ {
				a.get(lX)
				a.v(0x00, 4, 16*k) // v128.load offset 16k: w_{i+k}
				a.set(lWi + k)
			}
		} else {
			for k := byte(0); k < 4; k++ {
				a.vzero(lY + k)
			}
		}
		a.op(0x03, 0x40) // columns
		if pass == 0 {
			// t_j += splat(A[i, j])·w_i, then rows i+1, i+2, i+3
			a.get(lQ)
			var sum func(k byte)
			sum = func(k byte) { // t_j + Σ_{k' ≤ k} splat(A[i+k', j])·w_{i+k'}
				acc := func() { a.get(lQ); a.vload() }
				if k > 0 {
					acc = func() { sum(k - 1) }
				}
				a.mulAdd(acc, func() { a.vsplatLoad(lP + k) }, func() { a.get(lWi + k) })
			}
			sum(3)
			a.vstore(0)
		} else {
			// y_k += splat(A[i+k, j])·t_j
			a.get(lQ)
			a.vload()
			a.set(lTj)
			for k := byte(0); k < 4; k++ {
				a.mulAdd(func() { a.get(lY + k) }, func() { a.vsplatLoad(lP + k) }, func() { a.get(lTj) })
				a.set(lY + k)
			}
		}
		for k := byte(0); k < 4; k++ {
			a.add(lP+k, 4)
		}
		a.add(lQ, 16)
		a.whileLt(lQ, lTEnd)
		if pass == 1 {
			// acc_{i+k} += y_k
			a.addr16(lX, pAcc, lI)
			for k := byte(0); k < 4; k++ {
				a.get(lX)
				a.get(lX)
				a.v(0x00, 4, 16*k)
				a.get(lY + k)
				a.v(opF32Add)
				a.vstore(16 * k)
			}
		}
		a.get(lRowPtr)
		a.get(pStride)
		a.i32(2)
		a.op(0x74, 0x6a) // i32.shl, i32.add: four rows on
		a.set(lRowPtr)
		a.add(lI, 4)
		a.whileLt(lI, pR)
	}
	// locals: 7–15 i32; 16–24 v128
	return a.body(9, tI32, 9, tV128)
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
