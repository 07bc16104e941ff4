//go:build js && wasm

package worker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall/js"
	"unsafe"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/spectral"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"
)

// WebAssembly SIMD kernels for the probes (spectral.Kernels), the quick
// audit's bf16 scan (audit.ScanKernel), bf16 decoding (dtype.BF16Kernel)
// and the demo model's products (blas32.Use). Go's
// wasm backend emits no SIMD, so the audit workers compile this small
// hand-assembled module, which imports the worker's Go memory (worker.js
// exposes it as clefcheckMem) and works on the Go slices in place: for each
// row x of X, u = Σ_c x_c·w_c (one f32x4 per row of w, k = 4), then
// acc_c += x_c·u (one f32x4 per row of acc). It is checked against
// spectral.ApplyPortable on random data before it is used.

// asm is a tiny WebAssembly function-body assembler.
type asm struct{ c []byte }

const (
	tI32, tV128 = 0x7f, 0x7b
	simdPrefix  = 0xfd
)

func (a *asm) op(b ...byte)          { a.c = append(a.c, b...) }
func (a *asm) get(i byte)            { a.op(0x20, i) }
func (a *asm) set(i byte)            { a.op(0x21, i) }
func (a *asm) i32(v byte)            { a.op(0x41, v) } // small non-negative constants (< 64)
func (a *asm) v(op int, imm ...byte) { a.op(simdPrefix); a.op(uleb(op)...); a.op(imm...) }
func (a *asm) vconst(b [16]byte)     { a.v(0x0c, b[:]...) }
func (a *asm) vload()                { a.v(0x00, 4, 0) } // v128.load align 16, offset 0
func (a *asm) vstore(off byte)       { a.v(0x0b, 4, off) }

// whileLt ends a loop body: branch back while local l < local end (unsigned).
func (a *asm) whileLt(l, end byte) { a.get(l); a.get(end); a.op(0x49, 0x0d, 0, 0x0b) }

// addr sets local dst = local base + local i · 16.
func (a *asm) addr16(dst, base, i byte) {
	a.get(base)
	a.get(i)
	a.i32(4)
	a.op(0x74, 0x6a)
	a.set(dst)
}

// vzero sets a v128 local to zero.
func (a *asm) vzero(l byte) { a.vconst([16]byte{}); a.set(l) }

// vsplatLoad pushes splat(f32 at local p).
func (a *asm) vsplatLoad(p byte) { a.get(p); a.op(0x2a, 2, 0); a.v(opF32Splat) }

// blockEnd sets local dst = min(local p + 1024, local end): 64 vectors,
// the span over which float32 sums and 16-bit counts are kept.
func (a *asm) blockEnd(dst, p, end byte) {
	a.get(end)
	a.get(p)
	a.op(0x41, 0x80, 0x08, 0x6a, 0x22, dst) // i32.const 1024, i32.add, local.tee
	a.get(dst)
	a.get(end)
	a.op(0x4b, 0x1b) // i32.gt_u, select: end if p+1024 > end
	a.set(dst)
}

// flushF32 adds the four float32 lanes of local s into the f64x2 local acc.
func (a *asm) flushF32(acc, s byte) {
	a.get(acc)
	a.get(s)
	a.v(opF64PromoteLow)
	a.v(opF64Add)
	a.get(s)
	a.get(s)
	a.v(opShuffle, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15)
	a.v(opF64PromoteLow)
	a.v(opF64Add)
	a.set(acc)
}

// nonfinite sets local mask to the bf16 lanes of local v whose exponent
// bits are all set (NaN, ±Inf) and counts them into the i16x8 local cnt.
func (a *asm) nonfinite(v, mask, cnt byte) {
	exp := [16]byte{}
	for i := 0; i < 16; i += 2 {
		exp[i], exp[i+1] = 0x80, 0x7f // 0x7f80 little-endian
	}
	a.get(v)
	a.vconst(exp)
	a.v(opAnd)
	a.vconst(exp)
	a.v(opI16Eq)
	a.set(mask)
	a.get(cnt)
	a.get(mask)
	a.v(opI16Sub)
	a.set(cnt)
}

// addCounts adds the i16x8 counts of local c16 into the i32x4 local c32.
func (a *asm) addCounts(c32, c16 byte) {
	a.get(c32)
	a.get(c16)
	a.v(opI32ExtaddI16S)
	a.v(opI32Add)
	a.set(c32)
}

// add p += n (an i32 local, n < 64).
func (a *asm) add(l, n byte) { a.get(l); a.i32(n); a.op(0x6a); a.set(l) }

// body finishes a function with its local declarations (count, type)...
func (a *asm) body(locals ...byte) []byte {
	b := append([]byte{byte(len(locals) / 2)}, locals...)
	b = append(b, a.c...)
	b = append(b, 0x0b)
	return append(uleb(len(b)), b...)
}

// SIMD opcodes used (the WebAssembly SIMD proposal's final numbering).
const (
	opF32Splat       = 0x13
	opF32ExtractLane = 0x1f
	opShuffle        = 0x0d
	opI16Eq          = 0x2d
	opAnd, opAndNot  = 0x4e, 0x4f
	opF64PromoteLow  = 0x5f
	opI32ExtaddI16S  = 0x7e
	opI16Sub         = 0x91
	opI32ExtLowI16U  = 0xa9
	opI32ExtHighI16U = 0xaa
	opI32Shl         = 0xab
	opI32Add         = 0xae
	opF32Add         = 0xe4
	opF32Mul         = 0xe6
	opF64Add         = 0xf0
)

// apply4Body is apply4(x, rows, r, w, acc i32), rows even: for each pair
// of rows x, x' of X, u = Σ_c x_c·w_c and u' likewise (w and acc rows are
// one f32x4), then acc_c += x_c·u + x'_c·u'.
func apply4Body() []byte {
	const (
		pX, pRows, pR, pW, pAcc = 0, 1, 2, 3, 4
		lP, lRowBytes, lXEnd    = 5, 6, 7
		lQ, lP2                 = 8, 9
		lU, lU2, lWc            = 10, 11, 12
	)
	var a asm
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
			a.vzero(lU)
			a.vzero(lU2)
		} else {
			a.get(pAcc)
		}
		a.set(lQ)
		a.op(0x03, 0x40) // over the row
		if pass == 0 {
			// u += splat(x_c)·w_c; u' += splat(x'_c)·w_c
			a.get(lQ)
			a.vload()
			a.set(lWc)
			a.get(lU)
			a.vsplatLoad(lP)
			a.get(lWc)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.set(lU)
			a.get(lU2)
			a.vsplatLoad(lP2)
			a.get(lWc)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.set(lU2)
		} else {
			// acc_c += splat(x_c)·u + splat(x'_c)·u'
			a.get(lQ)
			a.get(lQ)
			a.vload()
			a.vsplatLoad(lP)
			a.get(lU)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.vsplatLoad(lP2)
			a.get(lU2)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.vstore(0)
		}
		a.add(lP, 4)
		a.add(lP2, 4)
		a.add(lQ, 16)
		a.get(lP)
		a.get(pX)
		a.get(lRowBytes)
		a.op(0x6a, 0x49, 0x0d, 0, 0x0b) // i32.add, i32.lt_u, br_if 0, end
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
	// locals: 5–9 i32; 10–12 v128
	return a.body(5, tI32, 3, tV128)
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
// at A[0, j0], rows stride bytes apart, r even; t (cols f32x4) =
// Σ_i A[i, ·]·w_i, then acc_i += Σ_j A[i, j]·t_j. Rows go in pairs, so that
// each t_j is loaded and stored once for two rows.
func apply4ColsBody() []byte {
	const (
		pA, pR, pStride, pCols, pW, pT, pAcc = 0, 1, 2, 3, 4, 5, 6
		lI, lP, lQ, lTEnd, lRowPtr, lX, lP2  = 7, 8, 9, 10, 11, 12, 13
		lWi, lY, lWi2, lY2, lTj              = 14, 15, 16, 17, 18
	)
	var a asm
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
		a.op(0x03, 0x40) // pairs of rows
		a.get(lRowPtr)
		a.set(lP)
		a.get(lRowPtr)
		a.get(pStride)
		a.op(0x6a)
		a.set(lP2)
		a.get(pT)
		a.set(lQ)
		if pass == 0 {
			a.addr16(lX, pW, lI)
			a.get(lX)
			a.vload()
			a.set(lWi)
			a.get(lX)
			a.v(0x00, 4, 16) // v128.load offset 16: w_{i+1}
			a.set(lWi2)
		} else {
			a.vzero(lY)
			a.vzero(lY2)
		}
		a.op(0x03, 0x40) // columns
		if pass == 0 {
			// t_j += splat(A[i, j])·w_i + splat(A[i+1, j])·w_{i+1}
			a.get(lQ)
			a.get(lQ)
			a.vload()
			a.vsplatLoad(lP)
			a.get(lWi)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.vsplatLoad(lP2)
			a.get(lWi2)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.vstore(0)
		} else {
			// y += splat(A[i, j])·t_j; y2 += splat(A[i+1, j])·t_j
			a.get(lQ)
			a.vload()
			a.set(lTj)
			a.get(lY)
			a.vsplatLoad(lP)
			a.get(lTj)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.set(lY)
			a.get(lY2)
			a.vsplatLoad(lP2)
			a.get(lTj)
			a.v(opF32Mul)
			a.v(opF32Add)
			a.set(lY2)
		}
		a.add(lP, 4)
		a.add(lP2, 4)
		a.add(lQ, 16)
		a.whileLt(lQ, lTEnd)
		if pass == 1 {
			// acc_i += y; acc_{i+1} += y2
			a.addr16(lX, pAcc, lI)
			a.get(lX)
			a.get(lX)
			a.vload()
			a.get(lY)
			a.v(opF32Add)
			a.vstore(0)
			a.get(lX)
			a.get(lX)
			a.v(0x00, 4, 16)
			a.get(lY2)
			a.v(opF32Add)
			a.vstore(16)
		}
		a.get(lRowPtr)
		a.get(pStride)
		a.i32(1)
		a.op(0x74, 0x6a) // i32.shl, i32.add: two rows on
		a.set(lRowPtr)
		a.add(lI, 2)
		a.whileLt(lI, pR)
	}
	// locals: 7–13 i32; 14–18 v128
	return a.body(7, tI32, 5, tV128)
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

// simdModule returns the module's bytes: apply4, scan, apply4cols, colsq,
// rowsq, decode and dots, with byte addresses into the imported "env" "mem".
func simdModule() []byte {
	section := func(id byte, content ...[]byte) []byte {
		var c []byte
		for _, x := range content {
			c = append(c, x...)
		}
		return append(append([]byte{id}, uleb(len(c))...), c...)
	}
	fn := func(params int) []byte { // a type taking params i32s, returning nothing
		t := []byte{0x60, byte(params)}
		for i := 0; i < params; i++ {
			t = append(t, tI32)
		}
		return append(t, 0)
	}
	name := func(s string, idx byte) []byte { return append(append([]byte{byte(len(s))}, s...), 0, idx) }
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, []byte{5}, fn(5), fn(3), fn(7), fn(4), fn(6))...)
	m = append(m, section(2, []byte{1, 3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0, 1})...)
	m = append(m, section(3, []byte{7, 0, 1, 2, 3, 3, 3, 4})...)
	m = append(m, section(7, []byte{7}, name("apply4", 0), name("scan", 1), name("apply4cols", 2), name("colsq", 3), name("rowsq", 4), name("decode", 5), name("dots", 6))...)
	m = append(m, section(10, []byte{7}, apply4Body(), scanBody(), apply4ColsBody(), colSqBody(), rowSqBody(), decodeBody(), dotsBody())...)
	return m
}

func uleb(n int) []byte {
	var out []byte
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

// InstallSIMD compiles the SIMD kernels against this Go instance's memory,
// checks each against its portable loop and installs them in packages
// spectral, audit and dtype. It returns why not when it cannot (no SIMD in
// this browser, no memory exposed, a wrong result); nothing is installed
// then.
func InstallSIMD() error {
	k, err := simdKernels()
	if err != nil {
		return err
	}
	if err := k.check(); err != nil {
		return err
	}
	spectral.SetKernels(k.probes)
	audit.SetScanKernel("wasm-simd", k.scan)
	dtype.SetBF16Kernel(k.decode)
	blas32.Use(k.blas)
	return nil
}

type simd struct {
	probes spectral.Kernels
	scan   audit.ScanKernel
	decode dtype.BF16Kernel
	blas   simdBlas
}

// simdBlas is gonum's float32 BLAS with Sgemm's C = α·A·Bᵀ + β·C (A and
// B with contiguous rows, k a multiple of 4) done by the dots kernel: the
// demo model's layers (package model), run in the engine worker for the
// in-browser decisions. Other shapes go to gonum.
type simdBlas struct {
	gonum.Implementation
	dots func(x []float32, rows, k int, w []float32, n int, dst []float32)
}

// maxDots bounds the scratch of one Sgemm by the kernel.
const maxDots = 1 << 22

func (b simdBlas) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, bb []float32, ldb int, beta float32, c []float32, ldc int) {
	if b.dots == nil || tA != blas.NoTrans || tB != blas.Trans || k <= 0 || k%4 != 0 || m <= 0 || n <= 0 || lda != k || ldb != k || ldc < n ||
		m*n > maxDots || len(a) < m*k || len(bb) < n*k || len(c) < (m-1)*ldc+n {
		b.Implementation.Sgemm(tA, tB, m, n, k, alpha, a, lda, bb, ldb, beta, c, ldc)
		return
	}
	d := make([]float32, m*n)
	b.dots(a, m, k, bb, n, d)
	for i := 0; i < m; i++ {
		row, di := c[i*ldc:i*ldc+n], d[i*n:(i+1)*n]
		if beta == 0 { // C is not read (BLAS)
			for j := range row {
				row[j] = alpha * di[j]
			}
			continue
		}
		for j := range row {
			row[j] = alpha*di[j] + beta*row[j]
		}
	}
}

func addr(x []float32) float64   { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(x)))) }
func addrBytes(b []byte) float64 { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// simdKernels compiles the module and wraps its functions. The wrappers
// check their slices' bounds as the Go loops would, and take the portable
// path for shapes the module does not handle (rows not a multiple of 4
// values).
func simdKernels() (*simd, error) {
	mem := js.Global().Get("clefcheckMem")
	if !mem.Truthy() {
		return nil, errors.New("the Go memory is not exposed (clefcheckMem)")
	}
	wa := js.Global().Get("WebAssembly")
	code := simdModule()
	u8 := js.Global().Get("Uint8Array").New(len(code))
	js.CopyBytesToJS(u8, code)
	if !wa.Call("validate", u8).Bool() {
		return nil, errors.New("this browser has no WebAssembly SIMD (or the module is malformed)")
	}
	env := js.Global().Get("Object").New()
	env.Set("mem", mem)
	imports := js.Global().Get("Object").New()
	imports.Set("env", env)
	ex := wa.Get("Instance").New(wa.Get("Module").New(u8), imports).Get("exports")
	applyFn, scanFn, colsFn := ex.Get("apply4"), ex.Get("scan"), ex.Get("apply4cols")
	colSqFn, rowSqFn, decodeFn, dotsFn := ex.Get("colsq"), ex.Get("rowsq"), ex.Get("decode"), ex.Get("dots")
	k := &simd{}
	k.blas.dots = func(x []float32, rows, kk int, w []float32, n int, dst []float32) {
		_, _, _ = x[rows*kk-1], w[n*kk-1], dst[rows*n-1]
		dotsFn.Invoke(addr(x), rows, kk, addr(w), n, addr(dst))
		runtime.KeepAlive(x)
		runtime.KeepAlive(w)
		runtime.KeepAlive(dst)
	}
	k.probes = spectral.Kernels{Name: "wasm-simd",
		Apply4: func(x []float32, rows, r int, w, acc []float32) {
			if rows <= 0 || r <= 0 {
				return
			}
			_, _, _ = x[rows*r-1], w[r*4-1], acc[r*4-1]
			if rows%2 == 1 { // the kernel takes rows in pairs
				rows--
				spectral.ApplyPortable(x[rows*r:], 1, r, w, acc)
				if rows == 0 {
					return
				}
			}
			applyFn.Invoke(addr(x), rows, r, addr(w), addr(acc))
			runtime.KeepAlive(x)
			runtime.KeepAlive(w)
			runtime.KeepAlive(acc)
		},
		Apply4Cols: func(a []float32, r, n, j0, cols int, w, t, acc []float32) {
			if r%2 != 0 || r <= 0 || cols <= 0 {
				spectral.ApplyColsPortable(a, r, n, j0, cols, 4, w, t, acc)
				return
			}
			_, _, _, _ = a[(r-1)*n+j0+cols-1], w[r*4-1], t[cols*4-1], acc[r*4-1]
			colsFn.Invoke(addr(a[j0:]), r, n*4, cols, addr(w), addr(t), addr(acc))
			runtime.KeepAlive(a)
			runtime.KeepAlive(w)
			runtime.KeepAlive(t)
			runtime.KeepAlive(acc)
		},
		ColSquares: func(x []float32, rows, r int, acc []float32) {
			if r%4 != 0 || rows <= 0 || r <= 0 {
				spectral.ColSquaresPortable(x, rows, r, acc)
				return
			}
			_, _ = x[rows*r-1], acc[r-1]
			colSqFn.Invoke(addr(x), rows, r, addr(acc))
			runtime.KeepAlive(x)
			runtime.KeepAlive(acc)
		},
		RowSquares: func(a []float32, r, n int, out []float64) {
			if n%4 != 0 || n <= 0 || r <= 0 {
				spectral.RowSquaresPortable(a, r, n, out)
				return
			}
			_, _ = a[r*n-1], out[r-1]
			pairs := make([]float64, 2*r)
			rowSqFn.Invoke(addr(a), r, n, float64(uintptr(unsafe.Pointer(unsafe.SliceData(pairs)))))
			runtime.KeepAlive(a)
			runtime.KeepAlive(pairs)
			for i := range out[:r] {
				out[i] = pairs[2*i] + pairs[2*i+1]
			}
		},
	}
	k.scan = func(b []byte) (int, float64) {
		out := make([]byte, 32)
		if len(b) >= 16 {
			scanFn.Invoke(addrBytes(b), len(b)/16, addrBytes(out))
		}
		runtime.KeepAlive(b)
		runtime.KeepAlive(out)
		return count4(out[16:]), math.Float64frombits(binary.LittleEndian.Uint64(out)) + math.Float64frombits(binary.LittleEndian.Uint64(out[8:]))
	}
	k.decode = func(src []byte, dst []float32) int {
		n := len(src) / 16
		if n == 0 {
			return 0
		}
		_ = dst[n*8-1]
		out := make([]byte, 16)
		decodeFn.Invoke(addrBytes(src), n, addr(dst), addrBytes(out))
		runtime.KeepAlive(src)
		runtime.KeepAlive(dst)
		runtime.KeepAlive(out)
		return count4(out)
	}
	return k, nil
}

// count4 sums four little-endian int32s.
func count4(b []byte) int {
	n := 0
	for i := 0; i < 16; i += 4 {
		n += int(int32(binary.LittleEndian.Uint32(b[i:])))
	}
	return n
}

// check compares every kernel with its portable loop on random data of
// awkward sizes (one row, several blocks, tails); the sums differ only in
// rounding, the decoded values and counts not at all.
func (k *simd) check() error {
	rng := rand.New(rand.NewPCG(7, 8))
	randn := func(n int, nonfinite bool) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	close := func(what string, got, want []float32) error {
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-4*(1+math.Abs(float64(want[i])))) {
				return fmt.Errorf("the SIMD %s gives %g for %g at %d", what, got[i], want[i], i)
			}
		}
		return nil
	}
	for _, size := range [][2]int{{1, 4}, {3, 16}, {37, 256}, {300, 12}, {64, 40}} {
		rows, r := size[0], size[1]
		x, w := randn(rows*r, false), randn(r*4, false)
		got, want := make([]float32, r*4), make([]float32, r*4)
		for i := range got {
			got[i], want[i] = float32(i), float32(i) // accumulates onto what is there
		}
		k.probes.Apply4(x, rows, r, w, got)
		spectral.ApplyPortable(x, rows, r, w, want)
		if err := close("probe product", got, want); err != nil {
			return err
		}
		gs, ws := make([]float32, r), make([]float32, r)
		k.probes.ColSquares(x, rows, r, gs)
		spectral.ColSquaresPortable(x, rows, r, ws)
		if err := close("column squares", gs, ws); err != nil {
			return err
		}
		// The same data as A (r' = rows, n = r): a column block and the row norms.
		a, n := x, r
		j0, cols := n/4, n-n/4
		t := make([]float32, cols*4)
		wr := randn(rows*4, false)
		ga, wa := make([]float32, rows*4), make([]float32, rows*4)
		k.probes.Apply4Cols(a, rows, n, j0, cols, wr, t, ga)
		spectral.ApplyColsPortable(a, rows, n, j0, cols, 4, wr, make([]float32, cols*4), wa)
		if err := close("column-block product", ga, wa); err != nil {
			return err
		}
		gr, wrs := make([]float64, rows), make([]float64, rows)
		k.probes.RowSquares(a, rows, n, gr)
		spectral.RowSquaresPortable(a, rows, n, wrs)
		for i := range gr {
			if math.Abs(gr[i]-wrs[i]) > 1e-5*wrs[i] {
				return fmt.Errorf("the SIMD row squares give %g for %g", gr[i], wrs[i])
			}
		}
	}
	// bf16: scan and decode, with NaN and ±Inf, over several blocks.
	for _, n := range []int{8, 64, 8 * 64, 8*64*3 + 40} {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			v := uint16(math.Float32bits(float32(rng.NormFloat64())) >> 16)
			switch rng.IntN(50) {
			case 0:
				v = 0x7fc0 // NaN
			case 1:
				v = 0xff80 // −Inf
			}
			binary.LittleEndian.PutUint16(b[2*i:], v)
		}
		nf, ss := k.scan(b)
		wnf, wss := audit.ScanBF16(b)
		if nf != wnf || math.Abs(ss-wss) > 1e-4*wss {
			return fmt.Errorf("the SIMD scan gives %d non-finite and Σx² = %g for %d and %g (%d values)", nf, ss, wnf, wss, n)
		}
		bulk := n / 8 * 8
		got := make([]float32, bulk)
		nf = k.decode(b[:2*bulk], got)
		wnf = 0
		for i := 0; i < bulk; i++ {
			want := dtype.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
			if math.Float32bits(got[i]) != math.Float32bits(want) {
				return fmt.Errorf("the SIMD decode gives %x for %x", math.Float32bits(got[i]), math.Float32bits(want))
			}
			if f := float64(want); math.IsNaN(f) || math.IsInf(f, 0) {
				wnf++
			}
		}
		if nf != wnf {
			return fmt.Errorf("the SIMD decode counts %d non-finite values, not %d", nf, wnf)
		}
	}
	// Sgemm, by the kernel (C = α·A·Bᵀ + β·C) and by gonum for the rest.
	for _, sh := range [][3]int{{1, 1, 4}, {3, 5, 16}, {37, 192, 64}, {150, 64, 192}, {7, 9, 6}} {
		m, n, kk := sh[0], sh[1], sh[2]
		a, bb := randn(m*kk, false), randn(n*kk, false)
		for _, ab := range [][2]float32{{1, 0}, {0.5, 1}} {
			got, want := randn(m*n, false), make([]float32, m*n)
			copy(want, got)
			k.blas.Sgemm(blas.NoTrans, blas.Trans, m, n, kk, ab[0], a, kk, bb, kk, ab[1], got, n)
			gonum.Implementation{}.Sgemm(blas.NoTrans, blas.Trans, m, n, kk, ab[0], a, kk, bb, kk, ab[1], want, n)
			if err := close(fmt.Sprintf("Sgemm (%d × %d × %d)", m, n, kk), got, want); err != nil {
				return err
			}
		}
	}
	return nil
}
