package wasmsimd

// apply4Body is apply4(x, rows, r, wt, acct i32), rows even, r a multiple
// of 4: Kernels.Apply4 with w and acc transposed, as four rows of r f32
// each (probe j's at wt + j·4r bytes; the glue transposes them). For each
// pair of rows x, x' of X (rows × r), u_j = Σ_c x_c·w_{c,j} and u'_j
// likewise, then acc_{j,c} += x_c·u_j + x'_c·u'_j.
//
// Vectors run along the row, four columns at a time: each vector of x
// and x' is loaded once for the four probes (two loads and four of w per
// eight multiply-adds, where splats of x needed six), and the
// eight partial sums s_j, s'_j are eight independent chains. Each u_j is
// its sum's four lanes added (two shuffles), which leaves it splat in
// every lane for the second pass. With splats of x (the kernel before
// this one) it ran at 10.5 GFMA/s, like this at 13.7 (the minimum of 15
// alternating runs; fused multiply-adds; V8 in Node 20, Intel Xeon at 2.1
// GHz, B of 17408 × 256).
func apply4Body(fused bool) []byte {
	const (
		pX, pRows, pR, pW, pAcc = 0, 1, 2, 3, 4
		lRowBytes, lXEnd        = 5, 6
		lP, lP2, lRowEnd        = 7, 8, 9
		lQ                      = 10 // 10–13: w's (then acc's) four rows
		lS                      = 14 // 14–21: s_0…s_3, s'_0…s'_3 (then u, u')
		lX, lX2, lT             = 22, 23, 24
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
		a.tee(lP)
		a.get(lRowBytes)
		a.op(0x6a)
		a.tee(lP2)
		a.set(lRowEnd) // x' starts where x ends
		base := byte(pW)
		if pass == 1 {
			base = pAcc
		}
		a.rowPtrs(lQ, base, lRowBytes)
		if pass == 0 {
			for l := byte(lS); l < lS+8; l++ {
				a.vzero(l)
			}
		}
		// pass 0: s_j += x·w_j, s'_j += x'·w_j; pass 1: acc_j += x·u_j + x'·u'_j
		a.pairLoop(pairLocals{lP, lP2, lRowEnd, lQ, lS, lX, lX2, lT}, pass == 0)
		if pass == 0 {
			// each s: its lanes' sum, in every lane
			for l := byte(lS); l < lS+8; l++ {
				a.hsum(l)
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
	// locals: 5–13 i32; 14–24 v128
	return a.body(9, tI32, 11, tV128)
}

// apply4ColsBody is apply4cols(a, r, stride, cols, w, tt, acc i32), r
// even, cols a multiple of 4: Kernels.Apply4Cols with vectors along A's
// rows. a points at A[0, j0], rows stride bytes apart; w and acc are r
// f32x4 as in Kernels.Apply4Cols; tt is scratch for t transposed (four rows of cols
// f32, probe p's at tt + p·4·cols). First tt_p = Σ_i A[i, ·]·w_{i,p}, two
// rows at a time with their eight w splat; then for each pair of rows
// the eight chains s_p = Σ_j A[i, j]·tt_p[j] (and s'_p), whose lanes' sums
// are added to acc_i (and acc_{i+1}). 1.2× the kernel with splats of A
// (measured as apply4's).
func apply4ColsBody(fused bool) []byte {
	const (
		pA, pR, pStride, pCols, pW, pT, pAcc = 0, 1, 2, 3, 4, 5, 6
		lI, lRowPtr, lP, lP2, lRowEnd        = 7, 8, 9, 10, 11
		lQ                                   = 12 // 12–15: tt's four rows
		lColBytes, lV                        = 16, 17
		lS                                   = 18 // 18–25: w splats (pass 0), sums (pass 1)
		lX, lX2, lT                          = 26, 27, 28
	)
	a := asm{fused: fused}
	a.get(pCols)
	a.i32(2)
	a.op(0x74) // i32.shl
	a.set(lColBytes)
	// tt = 0
	a.get(pT)
	a.set(lP)
	a.get(pT)
	a.get(lColBytes)
	a.i32(2)
	a.op(0x74, 0x6a)
	a.set(lRowEnd)
	a.op(0x03, 0x40)
	a.get(lP)
	a.vconst([16]byte{})
	a.vstore(0)
	a.add(lP, 16)
	a.whileLt(lP, lRowEnd)
	for pass := 0; pass < 2; pass++ {
		a.i32(0)
		a.set(lI)
		a.get(pA)
		a.set(lRowPtr)
		if pass == 0 {
			a.get(pW)
		} else {
			a.get(pAcc)
		}
		a.set(lV)
		a.op(0x03, 0x40) // pairs of rows
		a.get(lRowPtr)
		a.tee(lP)
		a.get(lColBytes)
		a.op(0x6a)
		a.set(lRowEnd)
		a.get(lRowPtr)
		a.get(pStride)
		a.op(0x6a)
		a.set(lP2)
		a.rowPtrs(lQ, pT, lColBytes)
		if pass == 0 {
			for k := byte(0); k < 8; k++ { // w_{i+k/4, k%4}
				a.vsplatLoadAt(lV, 4*k)
				a.set(lS + k)
			}
		} else {
			for k := byte(0); k < 8; k++ {
				a.vzero(lS + k)
			}
		}
		// pass 0: tt_p += x·w_{i,p} + x'·w_{i+1,p}; pass 1: s_p += x·tt_p, s'_p += x'·tt_p
		a.pairLoop(pairLocals{lP, lP2, lRowEnd, lQ, lS, lX, lX2, lT}, pass == 1)
		if pass == 1 {
			// acc_i += (Σ lanes of s_p)_p, acc_{i+1} likewise
			for l := byte(lS); l < lS+8; l++ {
				a.hsum(l)
			}
			for h := byte(0); h < 2; h++ {
				s := lS + 4*h
				a.get(lV)
				a.vloadAt(lV, 16*h)
				a.get(s)
				a.get(s + 1)
				a.v(opShuffle, 0, 1, 2, 3, 16, 17, 18, 19, 0, 1, 2, 3, 16, 17, 18, 19)
				a.get(s + 2)
				a.get(s + 3)
				a.v(opShuffle, 0, 1, 2, 3, 16, 17, 18, 19, 0, 1, 2, 3, 16, 17, 18, 19)
				a.v(opShuffle, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)
				a.v(opF32Add)
				a.vstore(16 * h)
			}
		}
		a.get(lRowPtr)
		a.get(pStride)
		a.i32(1)
		a.op(0x74, 0x6a) // two rows on
		a.set(lRowPtr)
		a.add(lV, 32)
		a.add(lI, 2)
		a.whileLt(lI, pR)
	}
	// locals: 7–17 i32; 18–28 v128
	return a.body(11, tI32, 11, tV128)
}

// hsum sets every lane of the f32x4 local l to the sum of its lanes.
func (a *asm) hsum(l byte) {
	for _, sh := range [][16]byte{
		{8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7},
		{4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11},
	} {
		a.get(l)
		a.get(l)
		a.get(l)
		a.v(opShuffle, sh[:]...)
		a.v(opF32Add)
		a.set(l)
	}
}

// pairLocals are the locals of pairLoop: the two rows' pointers and the
// first's end, four row pointers q…q+3 (advanced with them), eight f32x4
// s…s+7 and three scratch f32x4.
type pairLocals struct{ p, p2, end, q, s, x, x2, t byte }

// pairLoop is the inner loop of apply4 and apply4cols over two rows x, x'
// (at p, p2), four values at a time, for the four rows q_j of the other
// operand: with sums, s_j += x·q_j and s_{4+j} += x'·q_j; otherwise q_j +=
// x·s_j + x'·s_{4+j} (stored back).
func (a *asm) pairLoop(l pairLocals, sums bool) {
	a.op(0x03, 0x40)
	a.vloadAt(l.p, 0)
	a.set(l.x)
	a.vloadAt(l.p2, 0)
	a.set(l.x2)
	for j := byte(0); j < 4; j++ {
		if sums {
			a.vloadAt(l.q+j, 0)
			a.set(l.t)
			for h, xl := range []byte{l.x, l.x2} {
				s := l.s + j + 4*byte(h)
				a.mulAdd(func() { a.get(s) }, func() { a.get(xl) }, func() { a.get(l.t) })
				a.set(s)
			}
		} else {
			a.get(l.q + j)
			a.mulAdd(func() {
				a.mulAdd(func() { a.vloadAt(l.q+j, 0) }, func() { a.get(l.x) }, func() { a.get(l.s + j) })
			}, func() { a.get(l.x2) }, func() { a.get(l.s + 4 + j) })
			a.vstore(0)
		}
	}
	a.add(l.p, 16)
	a.add(l.p2, 16)
	for j := byte(0); j < 4; j++ {
		a.add(l.q+j, 16)
	}
	a.whileLt(l.p, l.end)
}

// rowPtrs sets the locals q…q+3 to base + j·step (four rows step bytes
// apart).
func (a *asm) rowPtrs(q, base, step byte) {
	a.get(base)
	a.set(q)
	for j := byte(1); j < 4; j++ {
		a.get(q + j - 1)
		a.get(step)
		a.op(0x6a) // i32.add
		a.set(q + j)
	}
}
