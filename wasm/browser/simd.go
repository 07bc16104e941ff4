//go:build js && wasm

package browser

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"syscall/js"
	"unsafe"

	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// A WebAssembly SIMD kernel for the probes (spectral.ProbeKernel4). Go's
// wasm backend emits no SIMD, so the audit workers compile this small
// hand-assembled module, which imports the worker's Go memory (worker.js
// exposes it as clefcheckMem) and works on the Go slices in place: for each
// row x of X, u = Σ_c x_c·w_c (one f32x4 per row of w, k = 4), then
// acc_c += x_c·u (one f32x4 per row of acc). It is checked against
// spectral.ApplyPortable on random data before it is used.

// simdModule returns the module's bytes: one function,
// apply4(x, rows, r, w, acc i32) with byte addresses into "env" "mem".
func simdModule() []byte {
	const (
		i32, v128                  = 0x7f, 0x7b
		localGet, localSet, tee    = 0x20, 0x21, 0x22
		i32Const, i32Add, i32Mul   = 0x41, 0x6a, 0x6c
		i32Shl, i32LtU, i32GeU     = 0x74, 0x49, 0x4f
		block, loop, brIf, end     = 0x02, 0x03, 0x0d, 0x0b
		void, f32Load, simd        = 0x40, 0x2a, 0xfd
		pX, pRows, pR, pW, pAcc    = 0, 1, 2, 3, 4
		lP, lRowBytes, lXEnd, lU   = 5, 6, 7, 8
		lQ                         = 10
		opLoad, opStore, opConst   = 0x00, 0x0b, 0x0c
		opSplat                    = 0x13
		opAddLo, opMulLo, opHighLE = 0xe4, 0xe6, 0x01 // f32x4.add 228, f32x4.mul 230 (LEB: e4 01, e6 01)
	)
	var c []byte
	op := func(b ...byte) { c = append(c, b...) }
	get := func(i byte) { op(localGet, i) }
	set := func(i byte) { op(localSet, i) }
	f32load := func() { op(f32Load, 2, 0) }        // align 4, offset 0
	vload := func() { op(simd, opLoad, 4, 0) }     // align 16, offset 0
	vstore := func() { op(simd, opStore, 4, 0) }   // align 16, offset 0
	splat := func() { op(simd, opSplat) }          // f32x4.splat
	fadd := func() { op(simd, opAddLo, opHighLE) } // f32x4.add
	fmul := func() { op(simd, opMulLo, opHighLE) } // f32x4.mul
	step := func(l byte, n byte) { get(l); op(i32Const, n, i32Add); set(l) }
	// rowBytes = r << 2; xEnd = x + rows·rowBytes
	get(pR)
	op(i32Const, 2, i32Shl)
	set(lRowBytes)
	get(pX)
	get(pRows)
	get(lRowBytes)
	op(i32Mul, i32Add)
	set(lXEnd)
	op(block, void)
	get(pX)
	get(lXEnd)
	op(i32GeU, brIf, 0)
	op(loop, void) // rows
	// u = 0
	op(simd, opConst)
	c = append(c, make([]byte, 16)...)
	set(lU)
	// u += splat(x[c]) · w[c], c over the row
	get(pX)
	set(lP)
	get(pW)
	set(lQ)
	op(loop, void)
	get(lU)
	get(lP)
	f32load()
	splat()
	get(lQ)
	vload()
	fmul()
	fadd()
	set(lU)
	step(lP, 4)
	step(lQ, 16)
	get(lP)
	get(pX)
	get(lRowBytes)
	op(i32Add, i32LtU, brIf, 0)
	op(end)
	// acc[c] += splat(x[c]) · u
	get(pX)
	set(lP)
	get(pAcc)
	set(lQ)
	op(loop, void)
	get(lQ)
	get(lQ)
	vload()
	get(lP)
	f32load()
	splat()
	get(lU)
	fmul()
	fadd()
	vstore()
	step(lP, 4)
	step(lQ, 16)
	get(lP)
	get(pX)
	get(lRowBytes)
	op(i32Add, i32LtU, brIf, 0)
	op(end)
	// next row
	get(pX)
	get(lRowBytes)
	op(i32Add, tee, pX)
	get(lXEnd)
	op(i32LtU, brIf, 0)
	op(end) // rows loop
	op(end) // block
	op(end) // function
	// locals: 5, 6, 7 i32; 8, 9 v128; 10 i32
	body := append([]byte{3, 3, i32, 2, v128, 1, i32}, c...)
	body = append(uleb(len(body)), body...)
	section := func(id byte, content []byte) []byte {
		return append(append([]byte{id}, uleb(len(content))...), content...)
	}
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(1, []byte{1, 0x60, 5, i32, i32, i32, i32, i32, 0})...)
	m = append(m, section(2, []byte{1, 3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0, 1})...)
	m = append(m, section(3, []byte{1, 0})...)
	m = append(m, section(7, []byte{1, 6, 'a', 'p', 'p', 'l', 'y', '4', 0, 0})...)
	m = append(m, section(10, append([]byte{1}, body...))...)
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
	spectral.SetProbeKernel("wasm-simd", kernel)
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
