package wasmsimd

// asm is a tiny WebAssembly function-body assembler: each helper appends
// the bytes of one or a few instructions (the WebAssembly core spec's
// binary format, SIMD opcodes behind the 0xfd prefix).
type asm struct {
	c     []byte
	fused bool // mulAdd emits f32x4.relaxed_madd (the relaxed-SIMD module)
}

// Value types and the SIMD prefix.
const (
	tI32, tV128 = 0x7f, 0x7b
	simdPrefix  = 0xfd
)

// The helpers are not inlined: the kernels' bodies are long straight-line
// calls, and with every append inlined this package took 320 kB of
// engine.wasm's code (66 kB without), for a module of 1844 bytes built
// once per worker.

//go:noinline
func (a *asm) op(b ...byte) { a.c = append(a.c, b...) }

//go:noinline
func (a *asm) get(i byte) { a.c = append(a.c, 0x20, i) }

//go:noinline
func (a *asm) set(i byte) { a.c = append(a.c, 0x21, i) }

// i32 is i32.const v, for small non-negative constants (< 64: one byte of
// signed LEB128).
//
//go:noinline
func (a *asm) i32(v byte) { a.c = append(a.c, 0x41, v) }

// v is the SIMD instruction op with its immediates.
//
//go:noinline
func (a *asm) v(op int, imm ...byte) {
	a.c = append(a.c, simdPrefix)
	a.c = append(a.c, uleb(op)...)
	a.c = append(a.c, imm...)
}

func (a *asm) vconst(b [16]byte) { a.v(0x0c, b[:]...) }
func (a *asm) vload()            { a.v(0x00, 4, 0) } // v128.load align 16, offset 0
func (a *asm) vstore(off byte)   { a.v(0x0b, 4, off) }

// whileLt ends a loop body: branch back while local l < local end (unsigned).
func (a *asm) whileLt(l, end byte) { a.get(l); a.get(end); a.op(0x49, 0x0d, 0, 0x0b) }

// addr16 sets local dst = local base + local i · 16.
func (a *asm) addr16(dst, base, i byte) {
	a.get(base)
	a.get(i)
	a.i32(4)
	a.op(0x74, 0x6a)
	a.set(dst)
}

// vzero sets a v128 local to zero.
func (a *asm) vzero(l byte) { a.vconst([16]byte{}); a.set(l) }

// vsplatLoadAt pushes splat(f32 at local p + off) (v128.load32_splat).
func (a *asm) vsplatLoadAt(p, off byte) { a.get(p); a.v(opLoad32Splat, 2, off) }

// vloadAt pushes the v128 at local p + off.
func (a *asm) vloadAt(p, off byte) { a.get(p); a.v(0x00, 4, off) }

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

// add sets local l += n (an i32 local; any n, signed LEB128 as i32c: the
// same bytes as i32 for 0 ≤ n < 64).
func (a *asm) add(l byte, n int32) { a.get(l); a.i32c(n); a.op(0x6a); a.set(l) }

// body finishes a function: its size, the local declarations (pairs of
// count, type), the code and end.
func (a *asm) body(locals ...byte) []byte {
	b := append([]byte{byte(len(locals) / 2)}, locals...)
	b = append(b, a.c...)
	b = append(b, 0x0b)
	return append(uleb(len(b)), b...)
}

// SIMD opcodes used (the WebAssembly SIMD proposal's final numbering).
const (
	opLoad32Splat    = 0x09
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
	opF32RelaxedMadd = 0x105 // relaxed SIMD: a·b + c, fused or not
)

// mulAdd leaves acc + x·y (f32x4) on the stack, pushing the three with the
// functions given: f32x4.mul then f32x4.add, or in a fused module one
// f32x4.relaxed_madd (x·y + acc, rounded once where the machine has FMA).
//
//go:noinline
func (a *asm) mulAdd(acc, x, y func()) {
	if a.fused {
		x()
		y()
		acc()
		a.v(opF32RelaxedMadd)
		return
	}
	acc()
	x()
	y()
	a.v(opF32Mul)
	a.v(opF32Add)
}

// uleb is n as an unsigned LEB128 (n ≥ 0).
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
