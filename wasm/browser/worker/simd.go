//go:build js && wasm

package worker

import (
	"encoding/binary"
	"errors"
	"hash"
	"math"
	"runtime"
	"syscall/js"
	"unsafe"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/spectral"
	"github.com/kvit-s/clefcheck/wasm/wasmsimd"
	"gonum.org/v1/gonum/blas/blas32"
)

// The WebAssembly SIMD kernels (assembled by package wasmsimd) as Go
// functions: the exact audit's Gram panels (spectral.GramKernels) and the
// bf16 decodes into them (spectral.RowKernels, ColumnKernels), the
// probes (spectral.Kernels), the quick audit's bf16 scan
// (dtype.ScanKernels), bf16 decoding (dtype.DecodeKernels) and the demo
// model's products (blas32.Use, simdblas.go). Go's wasm backend emits no
// SIMD, so the engine workers compile the module against their own Go
// memory (worker.js exposes it as clefcheckMem) and call it on Go slices
// in place, by address. Every kernel is checked against its portable loop
// (simdcheck.go) before it is installed.

// InstallSIMD compiles the SIMD kernels against this Go instance's memory,
// checks each against its portable loop and installs them in packages
// spectral, audit and dtype. It returns why not when it cannot (no SIMD in
// this browser, no memory exposed, a wrong result); nothing is installed
// then. The module with fused multiply-adds (relaxed SIMD: the probes and
// the Gram, "wasm-simd-fma") is tried first; where it does not validate or
// does not pass the checks, the plain one.
func InstallSIMD() error {
	if err := installSIMD(true); err == nil {
		return nil
	}
	return installSIMD(false)
}

// installSIMD installs the module with fused multiply-adds (relaxed SIMD)
// or the plain one.
func installSIMD(fused bool) error {
	k, err := simdKernels(fused)
	if err != nil {
		return err
	}
	if err := k.check(); err != nil {
		return err
	}
	name := wasmSIMD
	if fused {
		name = wasmSIMDFMA
	}
	k.probes.Name = name
	spectral.ProbeKernels.Install(name, k.probes)
	spectral.GramKernels.Install(name, k.gram)
	spectral.RowKernels.Install(wasmSIMD, k.rows)
	spectral.ColumnKernels.Install(wasmSIMD, k.cols)
	runner.SHA256.Install(wasmSIMD, k.sha256)
	dtype.ScanKernels.Install(wasmSIMD, k.scan)
	dtype.DecodeKernels.Install(wasmSIMD, k.decode)
	blas32.Use(k.blas)
	return nil
}

// wasmSIMD names the WebAssembly SIMD kernels in the registry (wasm/kernels);
// wasmSIMDFMA names the probes' and the Gram's kernels when they are the
// relaxed-SIMD module's (wasmsimd.ModuleFMA).
const (
	wasmSIMD    = "wasm-simd"
	wasmSIMDFMA = "wasm-simd-fma"
)

type simd struct {
	probes   spectral.Kernels
	scan     dtype.ScanKernel
	decode   dtype.BF16Kernel
	gram     spectral.GramKernel
	rows     spectral.RowKernel
	cols     spectral.ColumnKernel
	sha256   func() hash.Hash
	blas     simdBlas
	wt, acct []float32 // Apply4's w and acc transposed
}

func addr(x []float32) float64   { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(x)))) }
func addrBytes(b []byte) float64 { return float64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// simdKernels compiles the module and wraps its functions. The wrappers
// check their slices' bounds as the Go loops would, and take the portable
// path for shapes the module does not handle (rows not a multiple of 4
// values).
func simdKernels(fused bool) (*simd, error) {
	mem := js.Global().Get("clefcheckMem")
	if !mem.Truthy() {
		return nil, errors.New("the Go memory is not exposed (clefcheckMem)")
	}
	wa := js.Global().Get("WebAssembly")
	code := wasmsimd.Module()
	if fused {
		code = wasmsimd.ModuleFMA()
	}
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
	applyFn, scanFn, colsFn := ex.Get(wasmsimd.Apply4), ex.Get(wasmsimd.Scan), ex.Get(wasmsimd.Apply4Cols)
	colSqFn, rowSqFn, decodeFn, dotsFn := ex.Get(wasmsimd.ColSq), ex.Get(wasmsimd.RowSq), ex.Get(wasmsimd.Decode), ex.Get(wasmsimd.Dots)
	gramFn, rowsFn, colsPanelFn := ex.Get(wasmsimd.Gram), ex.Get(wasmsimd.Rows), ex.Get(wasmsimd.Cols)
	k := &simd{sha256: newWASMSHA256(ex.Get(wasmsimd.SHA256))}
	k.gram = func(p []float32, kk, stride int, g []float64) {
		if kk <= 0 || stride <= 0 {
			return
		}
		if stride%16 != 0 || spectral.PanelRows != 64 || kk > spectral.PanelRows { // the module's layout
			spectral.GramKernels.Portable()(p, kk, stride, g)
			return
		}
		_, _ = p[spectral.PanelRows*stride-1], g[stride*stride-1] // a packed panel, its Gram
		gramFn.Invoke(addr(p), kk, stride, float64(uintptr(unsafe.Pointer(unsafe.SliceData(g)))))
		runtime.KeepAlive(p)
		runtime.KeepAlive(g)
	}
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
			if r%4 != 0 { // the kernel takes columns in fours
				spectral.ApplyPortable(x, rows, r, w, acc)
				return
			}
			if rows%2 == 1 { // and rows in pairs
				rows--
				spectral.ApplyPortable(x[rows*r:], 1, r, w, acc)
				if rows == 0 {
					return
				}
			}
			// w and acc transposed, in the worker's scratch (the call does
			// not yield, so no other goroutine uses it meanwhile)
			if len(k.wt) < 4*r {
				k.wt, k.acct = make([]float32, 4*r), make([]float32, 4*r)
			}
			wt, at := k.wt[:4*r], k.acct[:4*r]
			for c := 0; c < r; c++ {
				wc := w[c*4 : c*4+4]
				wt[c], wt[r+c], wt[2*r+c], wt[3*r+c] = wc[0], wc[1], wc[2], wc[3]
			}
			clear(at)
			applyFn.Invoke(addr(x), rows, r, addr(wt), addr(at))
			runtime.KeepAlive(x)
			for c := 0; c < r; c++ {
				ac := acc[c*4 : c*4+4]
				ac[0] += at[c]
				ac[1] += at[r+c]
				ac[2] += at[2*r+c]
				ac[3] += at[3*r+c]
			}
		},
		Apply4Cols: func(a []float32, r, n, j0, cols int, w, t, acc []float32) {
			if r%2 != 0 || r <= 0 || cols < 4 { // the kernel takes rows in pairs, columns in fours
				spectral.ApplyColsPortable(a, r, n, j0, cols, 4, w, t, acc)
				return
			}
			_, _, _, _ = a[(r-1)*n+j0+cols-1], w[r*4-1], t[cols*4-1], acc[r*4-1]
			// t is the kernel's scratch (transposed); acc sums over column
			// subsets, so the last cols % 4 columns go to the portable loop
			c4 := cols &^ 3
			colsFn.Invoke(addr(a[j0:]), r, n*4, c4, addr(w), addr(t), addr(acc))
			runtime.KeepAlive(a)
			runtime.KeepAlive(w)
			runtime.KeepAlive(t)
			runtime.KeepAlive(acc)
			if c4 < cols {
				spectral.ApplyColsPortable(a, r, n, j0+c4, cols-c4, 4, w, t, acc)
			}
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
	// The bf16 decodes into the packed panels: one call per panel, the
	// shapes the module does not take (a row's last partial block, the
	// last rows or columns of a block) by the portable loops.
	portableRows, portableCols := spectral.RowKernels.Portable(), spectral.ColumnKernels.Portable()
	k.rows = func(src []byte, pitch int, p []float32, kk, n int) int {
		nb := n / spectral.PanelBlock
		if kk <= 0 || nb == 0 || kk > spectral.PanelRows || pitch < 2*n {
			return portableRows(src, pitch, p, kk, n)
		}
		stride := (n + 15) &^ 15
		_, _ = src[(kk-1)*pitch+2*n-1], p[spectral.PanelRows*stride-1]
		nf := panelCall(rowsFn, src, pitch, p, kk, nb)
		if c0 := nb * spectral.PanelBlock; c0 < n { // the partial block: one block of the panel
			for t := 0; t < kk; t++ {
				nf += tailRow(src[t*pitch+2*c0:t*pitch+2*n], p, t, c0)
			}
		}
		return nf
	}
	k.cols = func(src []byte, pitch int, p []float32, rows, kk int) int {
		r4, k8 := rows&^3, kk&^7
		if r4 == 0 || k8 == 0 || kk > spectral.PanelRows || pitch < 2*kk {
			return portableCols(src, pitch, p, rows, kk)
		}
		stride := (rows + 15) &^ 15
		_, _ = src[(rows-1)*pitch+2*kk-1], p[spectral.PanelRows*stride-1]
		nf := panelCall(colsPanelFn, src, pitch, p, r4, k8)
		for u := 0; u < rows; u++ { // the columns past k8, and the rows past r4
			from := k8
			if u >= r4 {
				from = 0
			}
			for t := from; t < kk; t++ {
				nf += widen(src[u*pitch+2*t:], &p[spectral.PanelAt(t, u)])
			}
		}
		return nf
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

// panelCall calls a panel decode of the module (rows or cols: src,
// pitch, p, two counts, out) and returns the non-finite count it wrote.
func panelCall(fn js.Value, src []byte, pitch int, p []float32, a, b int) int {
	out := make([]byte, 16)
	fn.Invoke(addrBytes(src), pitch, addr(p), a, b, addrBytes(out))
	runtime.KeepAlive(src)
	runtime.KeepAlive(p)
	runtime.KeepAlive(out)
	return count4(out)
}

// widen sets *dst to the bf16 value at src[0:2] and says whether it is
// non-finite (1) or not (0).
func widen(src []byte, dst *float32) int {
	u := uint32(src[0]) | uint32(src[1])<<8
	*dst = math.Float32frombits(u << 16)
	return int(((u & 0x7f80) + 0x80) >> 15)
}

// tailRow widens the values of src (fewer than 16: a row's last, partial
// block) into panel row t from column c0 on.
func tailRow(src []byte, p []float32, t, c0 int) int {
	nf := 0
	for j := 0; 2*j+1 < len(src); j++ {
		nf += widen(src[2*j:], &p[spectral.PanelAt(t, c0+j)])
	}
	return nf
}

// count4 sums four little-endian int32s.
func count4(b []byte) int {
	n := 0
	for i := 0; i < 16; i += 4 {
		n += int(int32(binary.LittleEndian.Uint32(b[i:])))
	}
	return n
}
