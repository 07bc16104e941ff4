package wasmsimd

// The bf16 decodes straight into the exact route's packed Gram panels
// (package spectral's layout: element (t, c) of a panel at byte
// ((c/16)·64 + t)·64 + (c%16)·4). Portable Go, they took about a third of
// a pool worker's exact audit in V8; these take the panel whole in one
// call.

// rowsBody is rows(src, pitch, p, k, nb, out): B's rows as panel rows. Row
// t < k of the panel is the nb·16 bf16 values at src + t·pitch (k ≥ 1,
// nb ≥ 1), widened to float32 (a shift: exact) into p at panel row t; the
// count of non-finite values (exponent all ones) goes to the i32x4 at out.
func rowsBody() []byte {
	const (
		pSrc, pPitch, pP, pK, pNB, pOut = 0, 1, 2, 3, 4, 5
		lRow, lRowsEnd, lS, lSEnd, lD   = 6, 7, 8, 9, 10
		lDRow                           = 11
		lV, lMask, lCnt16, lCnt32       = 12, 13, 14, 15
	)
	var a asm
	a.get(pSrc)
	a.set(lRow)
	a.get(pSrc)
	a.get(pK)
	a.get(pPitch)
	a.op(0x6c, 0x6a) // i32.mul, i32.add
	a.set(lRowsEnd)
	a.get(pP)
	a.set(lDRow)
	a.op(0x03, 0x40) // the panel's rows
	a.vzero(lCnt16)
	a.get(lRow)
	a.set(lS)
	a.get(lRow)
	a.get(pNB)
	a.i32(5)
	a.op(0x74, 0x6a) // nb·32 bytes: shl, add
	a.set(lSEnd)
	a.get(lDRow)
	a.set(lD)
	a.op(0x03, 0x40) // the row's blocks of 16 values
	for h := 0; h < 2; h++ {
		a.get(lS)
		a.v(0x00, 0, byte(16*h)) // v128.load align 1, offset 16h
		a.set(lV)
		a.nonfinite(lV, lMask, lCnt16)
		for i, ext := range []int{opI32ExtLowI16U, opI32ExtHighI16U} {
			a.get(lD)
			a.get(lV)
			a.v(ext)
			a.i32(16)
			a.v(opI32Shl)
			a.vstore(byte(32*h + 16*i))
		}
	}
	a.add(lS, 32)
	a.add(lD, 4096) // the next block: 64 rows of 64 bytes on
	a.whileLt(lS, lSEnd)
	a.addCounts(lCnt32, lCnt16)
	a.get(lRow)
	a.get(pPitch)
	a.op(0x6a)
	a.set(lRow)
	a.add(lDRow, 64) // the next panel row
	a.whileLt(lRow, lRowsEnd)
	a.get(pOut)
	a.get(lCnt32)
	a.vstore(0)
	// locals: 6–11 i32; 12–15 v128
	return a.body(6, tI32, 4, tV128)
}

// colsBody is cols(src, pitch, p, rows, k, out): A's columns as panel
// rows. Value (u, t) of the rows × k block at src (row u at src + u·pitch,
// bf16; rows a multiple of 4 and k of 8, both ≥ 1) goes, widened, to panel
// element (t, u); the count of non-finite values to the i32x4 at out.
// Four rows at a time, eight values each: widened, then transposed four by
// four in registers, so that each store writes four columns of one panel
// row.
func colsBody() []byte {
	const (
		pSrc, pPitch, pP, pRows, pK, pOut = 0, 1, 2, 3, 4, 5
		lRow, lRowsEnd, lU, lS, lSEnd     = 6, 7, 8, 9, 10
		lD, lPitch3                       = 11, 12
		lV                                = 13 // 13–16: the four rows' vectors
		lR                                = 17 // 17–20: the four rows widened
		lT                                = 21 // 21–24: half transposed
		lMask, lCnt16, lCnt32             = 25, 26, 27
	)
	var a asm
	a.get(pSrc)
	a.set(lRow)
	a.get(pSrc)
	a.get(pRows)
	a.get(pPitch)
	a.op(0x6c, 0x6a)
	a.set(lRowsEnd)
	a.get(pPitch)
	a.i32(3)
	a.op(0x6c) // i32.mul
	a.set(lPitch3)
	a.i32(0)
	a.set(lU)
	a.op(0x03, 0x40) // groups of four rows u … u+3
	a.vzero(lCnt16)
	// d = p + (u & −16)·256 + (u & 15)·4: panel row 0, column u.
	a.get(pP)
	a.get(lU)
	a.i32c(-16)
	a.op(0x71) // i32.and
	a.i32c(8)
	a.op(0x74, 0x6a) // shl, add
	a.get(lU)
	a.i32(15)
	a.op(0x71)
	a.i32(2)
	a.op(0x74, 0x6a)
	a.set(lD)
	a.get(lRow)
	a.set(lS)
	a.get(lRow)
	a.get(pK)
	a.i32(1)
	a.op(0x74, 0x6a) // k·2 bytes
	a.set(lSEnd)
	a.op(0x03, 0x40) // eight values of each row: t … t+7
	for i := byte(0); i < 4; i++ {
		a.get(lS)
		switch i { // row u+i at s + i·pitch
		case 1:
			a.get(pPitch)
			a.op(0x6a)
		case 2:
			a.get(pPitch)
			a.i32(1)
			a.op(0x74, 0x6a)
		case 3:
			a.get(lPitch3)
			a.op(0x6a)
		}
		a.v(0x00, 0, 0) // v128.load align 1
		a.set(lV + i)
		a.nonfinite(lV+i, lMask, lCnt16)
	}
	for h, ext := range []int{opI32ExtLowI16U, opI32ExtHighI16U} {
		for i := byte(0); i < 4; i++ {
			a.get(lV + i)
			a.v(ext)
			a.i32(16)
			a.v(opI32Shl)
			a.set(lR + i)
		}
		// T0 = (r0t0 r1t0 r0t1 r1t1), T1 = (r0t2 r1t2 r0t3 r1t3), T2, T3
		// likewise of rows 2 and 3; then C_j = column t_j of the four rows.
		lo := []byte{0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23}
		hi := []byte{8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31}
		for q, pair := range [][2]byte{{lR, lR + 1}, {lR + 2, lR + 3}} {
			a.get(pair[0])
			a.get(pair[1])
			a.v(opShuffle, lo...)
			a.set(lT + byte(q))
			a.get(pair[0])
			a.get(pair[1])
			a.v(opShuffle, hi...)
			a.set(lT + 2 + byte(q))
		}
		// lT: T0, T2 (rows 0–1 lo, rows 2–3 lo), then T1, T3 (hi).
		first := []byte{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}
		second := []byte{8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}
		for j := 0; j < 4; j++ {
			a.get(lD)
			x, y := byte(lT), byte(lT+1) // T0, T2
			if j >= 2 {
				x, y = byte(lT+2), byte(lT+3) // T1, T3
			}
			a.get(x)
			a.get(y)
			if j%2 == 0 {
				a.v(opShuffle, first...)
			} else {
				a.v(opShuffle, second...)
			}
			off := 64 * (4*h + j) // panel row t + 4h + j
			a.v(0x0b, append([]byte{4}, uleb(off)...)...)
		}
	}
	a.add(lS, 16)
	a.add(lD, 512) // eight panel rows on
	a.whileLt(lS, lSEnd)
	a.addCounts(lCnt32, lCnt16)
	a.get(lRow)
	a.get(pPitch)
	a.i32(2)
	a.op(0x74, 0x6a) // four rows on
	a.set(lRow)
	a.add(lU, 4)
	a.whileLt(lRow, lRowsEnd)
	a.get(pOut)
	a.get(lCnt32)
	a.vstore(0)
	// locals: 6–12 i32; 13–27 v128
	return a.body(7, tI32, 15, tV128)
}
