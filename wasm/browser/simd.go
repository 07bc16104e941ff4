//go:build js && wasm

package browser

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
	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// WebAssembly SIMD kernels for the probes (spectral.ProbeKernel4) and the
// quick audit's bf16 scan (audit.ScanKernel). Go's
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

// apply4Body is apply4(x, rows, r, w, acc i32): for each row x of X,
// u = Σ_c x_c·w_c, then acc_c += x_c·u (w and acc rows are one f32x4).
func apply4Body() []byte {
	const (
		pX, pRows, pR, pW, pAcc = 0, 1, 2, 3, 4
		lP, lRowBytes, lXEnd    = 5, 6, 7
		lU                      = 8
		lQ                      = 10
	)
	var a asm
	inner := func(first func(), second func()) {
		a.get(pX)
		a.set(lP)
		first()
		a.op(0x03, 0x40) // loop
		second()
		a.add(lP, 4)
		a.add(lQ, 16)
		a.get(lP)
		a.get(pX)
		a.get(lRowBytes)
		a.op(0x6a, 0x49, 0x0d, 0) // i32.add, i32.lt_u, br_if 0
		a.op(0x0b)
	}
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
	a.op(0x03, 0x40)    // loop over rows
	a.vconst([16]byte{})
	a.set(lU)
	inner(func() { a.get(pW); a.set(lQ) }, func() {
		// u += splat(x[c]) · w[c]
		a.get(lU)
		a.get(lP)
		a.op(0x2a, 2, 0) // f32.load
		a.v(opF32Splat)
		a.get(lQ)
		a.vload()
		a.v(opF32Mul)
		a.v(opF32Add)
		a.set(lU)
	})
	inner(func() { a.get(pAcc); a.set(lQ) }, func() {
		// acc[c] += splat(x[c]) · u
		a.get(lQ)
		a.get(lQ)
		a.vload()
		a.get(lP)
		a.op(0x2a, 2, 0)
		a.v(opF32Splat)
		a.get(lU)
		a.v(opF32Mul)
		a.v(opF32Add)
		a.vstore(0)
	})
	a.get(pX)
	a.get(lRowBytes)
	a.op(0x6a, 0x22, pX) // i32.add, local.tee x
	a.get(lXEnd)
	a.op(0x49, 0x0d, 0) // i32.lt_u, br_if 0 (next row)
	a.op(0x0b)          // loop
	a.op(0x0b)          // block
	// locals: 5, 6, 7 i32; 8, 9 v128; 10 i32
	return a.body(3, tI32, 2, tV128, 1, tI32)
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
	exp := [16]byte{}
	for i := 0; i < 16; i += 2 {
		exp[i], exp[i+1] = 0x80, 0x7f // 0x7f80 little-endian
	}
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
	// blockEnd = min(p + 1024, end)
	a.get(lEnd)
	a.get(pP)
	a.op(0x41, 0x80, 0x08) // i32.const 1024
	a.op(0x6a, 0x22, lBlockEnd)
	a.get(lBlockEnd)
	a.get(lEnd)
	a.op(0x4b) // i32.gt_u
	a.op(0x1b) // select: end if blockEnd > end, else blockEnd
	a.set(lBlockEnd)
	a.op(0x03, 0x40) // loop over vectors
	a.get(pP)
	a.vload()
	a.set(lV)
	// mask = (v & 0x7f80) == 0x7f80, per 16-bit lane
	a.get(lV)
	a.vconst(exp)
	a.v(opAnd)
	a.vconst(exp)
	a.v(opI16Eq)
	a.set(lMask)
	a.get(lCnt16)
	a.get(lMask)
	a.v(opI16Sub)
	a.set(lCnt16)
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
	// acc += promote(s[0:2]) + promote(s[2:4]); cnt32 += pairwise(cnt16)
	a.get(lAcc)
	a.get(lS)
	a.v(opF64PromoteLow)
	a.v(opF64Add)
	a.get(lS)
	a.get(lS)
	a.v(opShuffle, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15)
	a.v(opF64PromoteLow)
	a.v(opF64Add)
	a.set(lAcc)
	a.get(lCnt32)
	a.get(lCnt16)
	a.v(opI32ExtaddI16S)
	a.v(opI32Add)
	a.set(lCnt32)
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

// simdModule returns the module's bytes: apply4 and scan, with byte
// addresses into the imported "env" "mem".
func simdModule() []byte {
	section := func(id byte, content ...[]byte) []byte {
		var c []byte
		for _, x := range content {
			c = append(c, x...)
		}
		return append(append([]byte{id}, uleb(len(c))...), c...)
	}
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, []byte{2, 0x60, 5, tI32, tI32, tI32, tI32, tI32, 0, 0x60, 3, tI32, tI32, tI32, 0})...)
	m = append(m, section(2, []byte{1, 3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0, 1})...)
	m = append(m, section(3, []byte{2, 0, 1})...)
	m = append(m, section(7, []byte{2, 6, 'a', 'p', 'p', 'l', 'y', '4', 0, 0, 4, 's', 'c', 'a', 'n', 0, 1})...)
	m = append(m, section(10, []byte{2}, apply4Body(), scanBody())...)
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

func addr(x []float32) float64 { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(x)))) }

// InstallSIMD compiles the SIMD kernel against this Go instance's memory,
// checks it against the portable loop and installs it in package spectral.
// It returns why not when it cannot (no SIMD in this browser, no memory
// exposed, a wrong result).
func InstallSIMD() error {
	mem := js.Global().Get("clefcheckMem")
	if !mem.Truthy() {
		return errors.New("the Go memory is not exposed (clefcheckMem)")
	}
	wa := js.Global().Get("WebAssembly")
	code := simdModule()
	u8 := js.Global().Get("Uint8Array").New(len(code))
	js.CopyBytesToJS(u8, code)
	if !wa.Call("validate", u8).Bool() {
		return errors.New("this browser has no WebAssembly SIMD")
	}
	env := js.Global().Get("Object").New()
	env.Set("mem", mem)
	imports := js.Global().Get("Object").New()
	imports.Set("env", env)
	inst := wa.Get("Instance").New(wa.Get("Module").New(u8), imports)
	fn := inst.Get("exports").Get("apply4")
	kernel := func(x []float32, rows, r int, w, acc []float32) {
		if rows <= 0 || r <= 0 {
			return
		}
		_ = x[rows*r-1] // bounds, as the Go loop would check them
		_ = w[r*4-1]
		_ = acc[r*4-1]
		fn.Invoke(addr(x), rows, r, addr(w), addr(acc))
		runtime.KeepAlive(x)
		runtime.KeepAlive(w)
		runtime.KeepAlive(acc)
	}
	if err := checkKernel(kernel); err != nil {
		return err
	}
	scanFn := inst.Get("exports").Get("scan")
	scan := func(b []byte) (int, float64) {
		out := make([]byte, 32)
		if len(b) >= 16 {
			scanFn.Invoke(addrBytes(b), len(b)/16, addrBytes(out))
		}
		runtime.KeepAlive(b)
		runtime.KeepAlive(out)
		nf := 0
		for i := 16; i < 32; i += 4 {
			nf += int(int32(binary.LittleEndian.Uint32(out[i:])))
		}
		return nf, math.Float64frombits(binary.LittleEndian.Uint64(out)) + math.Float64frombits(binary.LittleEndian.Uint64(out[8:]))
	}
	if err := checkScan(scan); err != nil {
		return err
	}
	spectral.SetProbeKernel("wasm-simd", kernel)
	audit.SetScanKernel("wasm-simd", scan)
	return nil
}

func addrBytes(b []byte) float64 { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// checkScan compares the SIMD scan with audit.ScanBF16 on random bf16 data
// sprinkled with NaN and ±Inf, over more than one block of 64 vectors.
func checkScan(k audit.ScanKernel) error {
	rng := rand.New(rand.NewPCG(9, 10))
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
		nf, ss := k(b)
		wnf, wss := audit.ScanBF16(b)
		if nf != wnf || math.Abs(ss-wss) > 1e-4*wss {
			return fmt.Errorf("the SIMD scan gives %d non-finite and Σx² = %g for %d and %g (%d values)", nf, ss, wnf, wss, n)
		}
	}
	return nil
}

// checkKernel compares k with spectral.ApplyPortable on random data with
// odd sizes: the same sums in the same order, so equal but for the last
// bits.
func checkKernel(k spectral.ProbeKernel4) error {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, size := range [][2]int{{1, 1}, {3, 17}, {37, 256}} {
		rows, r := size[0], size[1]
		x := make([]float32, rows*r)
		w := make([]float32, r*4)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		got, want := make([]float32, r*4), make([]float32, r*4)
		for i := range got {
			got[i] = float32(i) // accumulates onto what is there
			want[i] = float32(i)
		}
		k(x, rows, r, w, got)
		spectral.ApplyPortable(x, rows, r, w, want)
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
				return fmt.Errorf("the SIMD kernel gives %g for %g (rows %d, r %d, entry %d)", got[i], want[i], rows, r, i)
			}
		}
	}
	return nil
}
