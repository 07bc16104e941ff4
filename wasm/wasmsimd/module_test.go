package wasmsimd

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// reader is a cursor over a module's bytes.
type reader struct {
	b       []byte
	err     error
	relaxed bool // f32x4.relaxed_madd is allowed (ModuleFMA)
	madds   int  // and was met this many times
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.fail("%d bytes wanted, %d left", n, len(r.b))
		n = len(r.b)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() int {
	n, shift := 0, 0
	for i := 0; i < 5; i++ {
		c := r.byte()
		n |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			return n
		}
		shift += 7
	}
	r.fail("LEB128 longer than 5 bytes")
	return n
}

// s32 reads a signed LEB128.
func (r *reader) s32() int {
	n, shift := 0, 0
	for {
		c := r.byte()
		n |= int(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				n -= 1 << shift
			}
			return n
		}
		if shift > 35 || r.err != nil {
			r.fail("malformed signed LEB128")
			return n
		}
	}
}

func (r *reader) name() string { return string(r.bytes(r.u32())) }

type funcType struct{ params, results []byte }

// parsed is what the walker learns of a module.
type parsed struct {
	sections []byte
	types    []funcType
	imports  []string // module.name:kind
	funcs    []int    // type index of each function
	exports  []string
	exportIx []int
	bodies   int
	madds    int // f32x4.relaxed_madd instructions
}

// walk checks the module's structure (the binary format of the core spec,
// chapter 5) for what this module uses: the sections in order with exact
// sizes, and every function body's instructions well formed and nested.
func walk(m []byte, relaxed bool) (*parsed, error) {
	r := &reader{b: m}
	if !bytes.Equal(r.bytes(4), []byte("\x00asm")) {
		return nil, fmt.Errorf("no \\0asm magic")
	}
	if v := r.bytes(4); !bytes.Equal(v, []byte{1, 0, 0, 0}) {
		return nil, fmt.Errorf("version % x, want 1", v)
	}
	p := &parsed{}
	for len(r.b) > 0 && r.err == nil {
		id := r.byte()
		if n := len(p.sections); n > 0 && id <= p.sections[n-1] {
			return nil, fmt.Errorf("section %d after section %d", id, p.sections[n-1])
		}
		p.sections = append(p.sections, id)
		s := &reader{b: r.bytes(r.u32())}
		switch id {
		case secType:
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				if s.byte() != 0x60 {
					s.fail("a type that is not a function type")
				}
				ft := funcType{params: s.bytes(s.u32())}
				ft.results = s.bytes(s.u32())
				p.types = append(p.types, ft)
			}
		case secImport:
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				mod, name, kind := s.name(), s.name(), s.byte()
				if kind != 2 {
					s.fail("import %s.%s of kind %d, want a memory", mod, name, kind)
				}
				if flags := s.byte(); flags == 0 {
					s.u32()
				} else {
					s.fail("memory limits flags %d", flags)
				}
				p.imports = append(p.imports, fmt.Sprintf("%s.%s:%d", mod, name, kind))
			}
		case secFunction:
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				t := s.u32()
				if t >= len(p.types) {
					s.fail("function of type %d, with %d types", t, len(p.types))
				}
				p.funcs = append(p.funcs, t)
			}
		case secExport:
			for n := s.u32(); n > 0 && s.err == nil; n-- {
				name, kind, idx := s.name(), s.byte(), s.u32()
				if kind != 0 || idx >= len(p.funcs) {
					s.fail("export %s: kind %d index %d", name, kind, idx)
				}
				p.exports, p.exportIx = append(p.exports, name), append(p.exportIx, idx)
			}
		case secCode:
			n := s.u32()
			if n != len(p.funcs) {
				s.fail("%d bodies for %d functions", n, len(p.funcs))
			}
			for i := 0; i < n && s.err == nil; i++ {
				body := &reader{b: s.bytes(s.u32()), relaxed: relaxed}
				if err := walkBody(body, len(p.types[p.funcs[i]].params)); err != nil {
					return nil, fmt.Errorf("function %d: %v", i, err)
				}
				p.bodies++
				p.madds += body.madds
			}
		default:
			return nil, fmt.Errorf("unexpected section %d", id)
		}
		if s.err == nil && len(s.b) != 0 {
			s.fail("%d bytes left over", len(s.b))
		}
		if s.err != nil {
			return nil, fmt.Errorf("section %d: %v", id, s.err)
		}
	}
	return p, r.err
}

// walkBody reads the locals and the instructions of one body: every opcode
// one this module uses with well-formed immediates, local indices in
// range, branches to enclosing labels, blocks closed, and the final end
// the body's last byte.
func walkBody(r *reader, params int) error {
	locals := params
	for n := r.u32(); n > 0 && r.err == nil; n-- {
		locals += r.u32()
		if t := r.byte(); t != tI32 && t != tV128 {
			r.fail("local of type %#x", t)
		}
	}
	depth := 1 // the function's own block
	for depth > 0 && r.err == nil {
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03: // block, loop
			if bt := r.byte(); bt != 0x40 {
				r.fail("block type %#x", bt)
			}
			depth++
		case op == 0x0b: // end
			depth--
		case op == 0x0d: // br_if
			if l := r.u32(); l >= depth {
				r.fail("br_if %d at depth %d", l, depth)
			}
		case op == 0x1b: // select
		case op >= 0x20 && op <= 0x22: // local.get, local.set, local.tee
			if l := r.u32(); l >= locals {
				r.fail("local %d of %d", l, locals)
			}
		case op == 0x2a || op == 0x38 || op == 0x28 || op == 0x36: // f32.load, f32.store, i32.load, i32.store
			if align := r.u32(); align > 2 {
				r.fail("32-bit access aligned 2^%d", align)
			}
			r.u32()
		case op == 0x41: // i32.const
			r.s32()
		case op == 0x49 || op == 0x4b || op == 0x4f || op == 0x6a || op == 0x6c || (op >= 0x71 && op <= 0x78 && op != 0x75) || op == 0x92:
			// i32.lt_u, i32.gt_u, i32.ge_u, i32.add, i32.mul, i32.and,
			// i32.or, i32.xor, i32.shl, i32.shr_u, i32.rotl, i32.rotr, f32.add
		case op == simdPrefix:
			switch v := r.u32(); v {
			case 0x00, 0x0b: // v128.load, v128.store
				if align := r.u32(); align > 4 {
					r.fail("v128 access aligned 2^%d", align)
				}
				r.u32()
			case opLoad32Splat:
				if align := r.u32(); align > 2 {
					r.fail("v128.load32_splat aligned 2^%d", align)
				}
				r.u32()
			case 0x0c: // v128.const
				r.bytes(16)
			case opShuffle:
				for _, l := range r.bytes(16) {
					if l >= 32 {
						r.fail("shuffle lane %d", l)
					}
				}
			case opF32ExtractLane:
				if l := r.byte(); l >= 4 {
					r.fail("f32x4 lane %d", l)
				}
			case opF32Splat, opI16Eq, opAnd, opAndNot, opF64PromoteLow, opI32ExtaddI16S, opI16Sub,
				opI32ExtLowI16U, opI32ExtHighI16U, opI32Shl, opI32Add, opF32Add, opF32Mul, opF64Add:
			case opF32RelaxedMadd:
				if !r.relaxed {
					r.fail("f32x4.relaxed_madd outside the relaxed-SIMD module")
				}
				r.madds++
			default:
				r.fail("unknown SIMD opcode %#x", v)
			}
		default:
			r.fail("unknown opcode %#x", op)
		}
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d bytes after the final end", len(r.b))
	}
	return r.err
}

// TestModule: the module is well formed, and exports what the glue
// (wasm/browser/worker) calls, with the parameters it passes.
func TestModule(t *testing.T) {
	for _, fused := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "fma"}[fused], func(t *testing.T) { testModule(t, fused) })
	}
}

func testModule(t *testing.T, fused bool) {
	m := Module()
	if fused {
		m = ModuleFMA()
	}
	p, err := walk(m, fused)
	if err != nil {
		t.Fatal(err)
	}
	// The fused module has a relaxed_madd for every mul and add pair of
	// the probes' and the Gram's kernels, the plain one none (it must
	// validate where relaxed SIMD does not).
	if wantMadds := map[bool]int{false: 0, true: 16 + 16 + 8}[fused]; p.madds != wantMadds {
		t.Errorf("%d relaxed multiply-adds, want %d", p.madds, wantMadds)
	}
	if want := []byte{secType, secImport, secFunction, secExport, secCode}; !bytes.Equal(p.sections, want) {
		t.Errorf("sections %v, want %v", p.sections, want)
	}
	if want := []string{"env.mem:2"}; !slices.Equal(p.imports, want) {
		t.Errorf("imports %v, want %v", p.imports, want)
	}
	// The names and parameter counts the glue uses.
	want := []struct {
		name   string
		params int
	}{{"apply4", 5}, {"scan", 3}, {"apply4cols", 7}, {"colsq", 4}, {"rowsq", 4}, {"decode", 4}, {"dots", 6}, {"gram", 4}, {"sha256", 3}, {"rows", 6}, {"cols", 6}}
	if len(p.exports) != len(want) || p.bodies != len(want) {
		t.Fatalf("exports %v (%d bodies), want %d functions", p.exports, p.bodies, len(want))
	}
	seen := map[string]bool{}
	for i, w := range want {
		if p.exports[i] != w.name || p.exportIx[i] != i {
			t.Errorf("export %d is %s (function %d), want %s (function %d)", i, p.exports[i], p.exportIx[i], w.name, i)
		}
		ft := p.types[p.funcs[i]]
		if !bytes.Equal(ft.params, bytes.Repeat([]byte{tI32}, w.params)) || len(ft.results) != 0 {
			t.Errorf("%s: params % x results % x, want %d i32 and none", w.name, ft.params, ft.results, w.params)
		}
		seen[fmt.Sprint(ft)] = true
	}
	if len(p.types) != len(seen) {
		t.Errorf("%d types for %d distinct signatures", len(p.types), len(seen))
	}
}

// TestWalkerRejects: the walker is not a rubber stamp.
func TestWalkerRejects(t *testing.T) {
	m := Module()
	for name, spoil := range map[string]func([]byte) []byte{
		"magic":     func(b []byte) []byte { b[1] = 'b'; return b },
		"version":   func(b []byte) []byte { b[4] = 2; return b },
		"truncated": func(b []byte) []byte { return b[:len(b)-1] },
		"trailing":  func(b []byte) []byte { return append(b, 0) },
		"opcode": func(b []byte) []byte {
			i := bytes.LastIndexByte(b, 0x0b) // the last body's final end
			b[i] = 0xff
			return b
		},
	} {
		if _, err := walk(spoil(bytes.Clone(m)), false); err == nil {
			t.Errorf("a module with a bad %s passed", name)
		}
	}
	if _, err := walk(ModuleFMA(), false); err == nil {
		t.Error("the fused module passed as one without relaxed SIMD")
	}
}
