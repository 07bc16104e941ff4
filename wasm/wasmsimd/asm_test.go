package wasmsimd

import (
	"bytes"
	"testing"
)

func TestUleb(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{63, []byte{0x3f}},
		{64, []byte{0x40}}, // unsigned: no sign bit to spill into a second byte
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x01}},
		{255, []byte{0xff, 0x01}},
		{300, []byte{0xac, 0x02}},
		{16383, []byte{0xff, 0x7f}},
		{16384, []byte{0x80, 0x80, 0x01}},
		{624485, []byte{0xe5, 0x8e, 0x26}},
		{1<<32 - 1, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
	} {
		if got := uleb(c.n); !bytes.Equal(got, c.want) {
			t.Errorf("uleb(%d) = % x, want % x", c.n, got, c.want)
		}
	}
}

// TestSIMDOpcodes: the opcode constants are the WebAssembly SIMD
// instructions they are named after (core spec 2.0, 5.4.8).
func TestSIMDOpcodes(t *testing.T) {
	for _, c := range []struct {
		name string
		got  int
		want int
	}{
		{"f32x4.splat", opF32Splat, 19},
		{"f32x4.extract_lane", opF32ExtractLane, 31},
		{"i8x16.shuffle", opShuffle, 13},
		{"i16x8.eq", opI16Eq, 45},
		{"v128.and", opAnd, 78},
		{"v128.andnot", opAndNot, 79},
		{"f64x2.promote_low_f32x4", opF64PromoteLow, 95},
		{"i32x4.extadd_pairwise_i16x8_s", opI32ExtaddI16S, 126},
		{"i16x8.sub", opI16Sub, 145},
		{"i32x4.extend_low_i16x8_u", opI32ExtLowI16U, 169},
		{"i32x4.extend_high_i16x8_u", opI32ExtHighI16U, 170},
		{"i32x4.shl", opI32Shl, 171},
		{"i32x4.add", opI32Add, 174},
		{"f32x4.add", opF32Add, 228},
		{"f32x4.mul", opF32Mul, 230},
		{"f64x2.add", opF64Add, 240},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d, the spec says %d", c.name, c.got, c.want)
		}
	}
}

// TestEncoding: each helper emits the spec's bytes.
func TestEncoding(t *testing.T) {
	for _, c := range []struct {
		name string
		emit func(a *asm)
		want []byte
	}{
		{"local.get 3", func(a *asm) { a.get(3) }, []byte{0x20, 3}},
		{"local.set 5", func(a *asm) { a.set(5) }, []byte{0x21, 5}},
		{"i32.const 16", func(a *asm) { a.i32(16) }, []byte{0x41, 16}},
		{"v128.load align=16 offset=0", func(a *asm) { a.vload() }, []byte{0xfd, 0x00, 4, 0}},
		{"v128.store align=16 offset=16", func(a *asm) { a.vstore(16) }, []byte{0xfd, 0x0b, 4, 16}},
		{"v128.const", func(a *asm) { a.vconst([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) },
			[]byte{0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{"f32x4.splat (one-byte opcode)", func(a *asm) { a.v(opF32Splat) }, []byte{0xfd, 0x13}},
		{"f32x4.mul (two-byte opcode)", func(a *asm) { a.v(opF32Mul) }, []byte{0xfd, 0xe6, 0x01}},
		{"i16x8.sub", func(a *asm) { a.v(opI16Sub) }, []byte{0xfd, 0x91, 0x01}},
		{"f32x4.extract_lane 3", func(a *asm) { a.v(opF32ExtractLane, 3) }, []byte{0xfd, 0x1f, 3}},
		{"vzero", func(a *asm) { a.vzero(9) }, append(append([]byte{0xfd, 0x0c}, make([]byte, 16)...), 0x21, 9)},
		// local.get p, f32.load align=4 offset=0, f32x4.splat
		{"vsplatLoadAt", func(a *asm) { a.vsplatLoadAt(7, 12) }, []byte{0x20, 7, 0xfd, 0x09, 2, 12}},
		// local.get l, local.get end, i32.lt_u, br_if 0, end
		{"whileLt", func(a *asm) { a.whileLt(1, 2) }, []byte{0x20, 1, 0x20, 2, 0x49, 0x0d, 0, 0x0b}},
		// local.get, i32.const, i32.add, local.set
		{"add", func(a *asm) { a.add(5, 16) }, []byte{0x20, 5, 0x41, 16, 0x6a, 0x21, 5}},
		// base + i<<4: local.get, local.get, i32.const 4, i32.shl, i32.add, local.set
		{"addr16", func(a *asm) { a.addr16(8, 3, 4) }, []byte{0x20, 3, 0x20, 4, 0x41, 4, 0x74, 0x6a, 0x21, 8}},
		// end, p, i32.const 1024 (signed LEB 0x80 0x08), add, tee dst, dst, end, gt_u, select, set dst
		{"blockEnd", func(a *asm) { a.blockEnd(7, 0, 8) },
			[]byte{0x20, 8, 0x20, 0, 0x41, 0x80, 0x08, 0x6a, 0x22, 7, 0x20, 7, 0x20, 8, 0x4b, 0x1b, 0x21, 7}},
		// i32x4.extadd_pairwise_i16x8_s, i32x4.add
		{"addCounts", func(a *asm) { a.addCounts(6, 5) }, []byte{0x20, 6, 0x20, 5, 0xfd, 0x7e, 0xfd, 0xae, 0x01, 0x21, 6}},
	} {
		var a asm
		c.emit(&a)
		if !bytes.Equal(a.c, c.want) {
			t.Errorf("%s: % x, want % x", c.name, a.c, c.want)
		}
	}
}

// TestBody: a function body is its size, then the local declarations
// (a vector of count, type), the code and end (0x0b).
func TestBody(t *testing.T) {
	var a asm
	a.op(0x01) // nop
	got := a.body(2, tI32, 1, tV128)
	want := []byte{7, 2, 2, 0x7f, 1, 0x7b, 0x01, 0x0b}
	if !bytes.Equal(got, want) {
		t.Errorf("body: % x, want % x", got, want)
	}
	var empty asm
	if got := empty.body(); !bytes.Equal(got, []byte{2, 0, 0x0b}) {
		t.Errorf("empty body: % x", got)
	}
}
