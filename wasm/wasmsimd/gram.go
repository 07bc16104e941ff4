package wasmsimd

// gramBody is gram(p, k, stride, g): the Gram panel update of package
// spectral (spectral.GramKernel). For the first k ≥ 1 rows of a packed
// panel P (spectral's layout: columns in blocks of 16, each block's 64
// rows contiguous, so that element (t, c) is at byte
// ((c/16)·64 + t)·64 + (c%16)·4; stride a multiple of 16) it adds Pᵀ·P
// into g (stride × stride f64) in tiles of 4 rows × 8 columns on and
// above the diagonal: per row of P two loads of b = P[t, j0:j0+8], four
// splats of a = P[t, i0+r] and eight products into eight f32x4 sums, the
// sums over the panel's k rows then added into g in float64, as the
// portable kernel does (tiles reaching below the diagonal fill entries
// the Gram never reads). Both walk their block's rows 64 bytes apart.
func gramBody(fused bool) []byte {
	const (
		pP, pK, pStride, pG                = 0, 1, 2, 3
		lRowBytes, lPEnd, lI0, lJ0, lA, lB = 4, 5, 6, 7, 8, 9
		lAEnd, lGRow, lRowG                = 10, 11, 12
		lAcc                               = 13 // 13–20: row r, half h at 13 + 2r + h
		lB0, lB1, lS                       = 21, 22, 23
		nI32, nV128                        = 9, 11
	)
	a := asm{fused: fused}
	a.get(pStride)
	a.i32(2)
	a.op(0x74) // i32.shl
	a.set(lRowBytes)
	a.get(pStride)
	a.i32(3)
	a.op(0x74)
	a.set(lRowG) // a row of g: stride·8 bytes
	a.get(pK)
	a.i32(6)
	a.op(0x74)
	a.set(lPEnd) // k rows of a block: k·64 bytes
	a.i32(0)
	a.set(lI0)
	a.op(0x03, 0x40) // i0: four rows of the Gram (16 bytes of a row of P)
	a.get(lI0)
	a.i32(0x60) // i32.const -32 (one byte of signed LEB128)
	a.op(0x71)  // i32.and: i0 rounded down to a tile of 8 columns
	a.set(lJ0)
	a.op(0x03, 0x40) // j0: eight columns
	for l := byte(lAcc); l < lAcc+8; l++ {
		a.vzero(l)
	}
	a.packed(lA, pP, lI0)
	a.packed(lB, pP, lJ0)
	a.get(lA)
	a.get(lPEnd)
	a.op(0x6a)
	a.set(lAEnd)
	a.op(0x03, 0x40) // t: the panel's rows
	a.get(lB)
	a.vload()
	a.set(lB0)
	a.get(lB)
	a.v(0x00, 4, 16) // v128.load offset 16
	a.set(lB1)
	for r := byte(0); r < 4; r++ {
		a.get(lA)
		a.v(opLoad32Splat, 2, 4*r)
		a.set(lS)
		for h := byte(0); h < 2; h++ {
			acc := lAcc + 2*r + h
			a.mulAdd(func() { a.get(acc) }, func() { a.get(lS) }, func() { a.get(lB0 + h) })
			a.set(acc)
		}
	}
	for _, l := range []byte{lA, lB} { // the next row of the block
		a.add(l, 64)
	}
	a.whileLt(lA, lAEnd)
	// g[i0 + r, j0 : j0+8] += the sums, in float64: the row of g at
	// g + (i0/4 + r)·stride·8 + j0·2 bytes (i0, j0 in bytes of P's row).
	a.get(pG)
	a.get(lI0)
	a.get(pStride)
	a.op(0x6c) // i32.mul
	a.i32(1)
	a.op(0x74) // ·2
	a.op(0x6a)
	a.get(lJ0)
	a.i32(1)
	a.op(0x74)
	a.op(0x6a)
	a.set(lGRow)
	for r := byte(0); r < 4; r++ {
		for h := byte(0); h < 2; h++ {
			acc := lAcc + 2*r + h
			for half := byte(0); half < 2; half++ {
				off := 32*h + 16*half
				a.get(lGRow)
				a.get(lGRow)
				a.v(0x00, 4, off) // the f64x2 of g there
				a.get(acc)
				if half == 1 {
					a.get(acc)
					a.v(opShuffle, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15)
				}
				a.v(opF64PromoteLow)
				a.v(opF64Add)
				a.vstore(off)
			}
		}
		a.get(lGRow)
		a.get(lRowG)
		a.op(0x6a)
		a.set(lGRow)
	}
	a.add(lJ0, 32)
	a.whileLt(lJ0, lRowBytes)
	a.add(lI0, 16)
	a.whileLt(lI0, lRowBytes)
	return a.body(nI32, tI32, nV128, tV128)
}

// packed sets local dst = local p + where column c of row 0 of a packed
// panel is, for c given as its byte offset cb = 4c in an unpacked row:
// ((cb & −64) << 6) + (cb & 63) (a block of 16 columns is 64 rows of 64
// bytes).
func (a *asm) packed(dst, p, cb byte) {
	a.get(p)
	a.get(cb)
	a.i32(0x40) // i32.const −64
	a.op(0x71)  // and
	a.i32(6)
	a.op(0x74, 0x6a) // shl, add
	a.get(cb)
	a.i32(63)
	a.op(0x71, 0x6a) // and, add
	a.set(dst)
}
