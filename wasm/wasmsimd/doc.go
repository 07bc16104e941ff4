// Package wasmsimd assembles clefcheck's WebAssembly SIMD kernels: a small
// hand-written module (Module) that the browser's engine workers compile
// against their own Go memory, because Go's wasm backend emits no SIMD
// instructions. It is pure Go (no syscall/js): the bytes are built and
// tested natively; the glue that instantiates the module and calls it on Go
// slices is in wasm/browser/worker (simd.go).
//
// The module imports one memory, "env" "mem" (the Go instance's, which
// public/worker.js exposes as clefcheckMem), and exports eleven functions
// (Funcs), every parameter an i32 and every pointer a byte address into
// that memory:
//
//	apply4(x, rows, r, wt, acct)    rows even, r a multiple of 4: for each pair of
//	                                rows x, x' of X (rows × r), u_j = Σ_c x_c·w_{c,j},
//	                                u'_j likewise, acc_{j,c} += x_c·u_j + x'_c·u'_j
//	                                (w, acc transposed: 4 rows of r f32)
//	scan(p, nvec, out)              nvec × 8 bf16 values: the count of non-finite
//	                                ones (i32x4 at out+16) and Σx² of the others
//	                                (f64x2 at out)
//	apply4cols(a, r, stride, cols, w, t, acc)
//	                                A's column block (rows stride bytes apart,
//	                                r even, cols a multiple of 4): t = Σ_i A[i,·]·w_i
//	                                (t transposed, scratch), acc_i += Σ_j A[i,j]·t_j
//	colsq(x, rows, r, acc)          acc (r f32) += the squares of every row of X
//	rowsq(a, r, n, out)             each row's Σx² as an f64x2 at out + 16·i
//	decode(src, nvec, dst, out)     nvec × 8 bf16 to f32 at dst; the non-finite
//	                                count as an i32x4 at out
//	dots(x, rows, k, w, n, dst)     dst[i·n+j] = Σ_c X[i,c]·W[j,c] (X·Wᵀ)
//	gram(p, k, stride, g)           g (stride × stride f64) += Pᵀ·P for P k × stride
//	                                f32, on and above the diagonal in 4 × 8 tiles
//	                                (spectral.GramKernel; stride a multiple of 16)
//	sha256(state, data, n)          SHA-256's compression of n 64-byte blocks at
//	                                data into the eight u32 words at state
//	                                (scalar: no SIMD, but V8 compiles it to far
//	                                faster code than Go's wasm backend makes of
//	                                crypto/sha256)
//	rows(src, pitch, p, k, nb, out) k rows of nb·16 bf16 (pitch bytes apart) widened
//	                                into panel rows 0 … k−1 of the packed panel p
//	                                (spectral's layout); the non-finite count as an
//	                                i32x4 at out
//	cols(src, pitch, p, rows, k, out)
//	                                the rows × k bf16 block at src (rows a multiple
//	                                of 4, k of 8) transposed into the panel: value
//	                                (u, t) to element (t, u); the count at out
//
// Float32 sums are kept over blocks of 64 vectors and added in float64;
// the glue checks every kernel against its portable Go loop before
// installing it, so a result here differs from the Go one only in
// rounding.
//
// The opcodes are those of the WebAssembly core specification 2.0 with
// fixed-width SIMD (the 0xfd prefix, final numbering). ModuleFMA is the
// same module with the multiply-adds of apply4, apply4cols and gram as
// f32x4.relaxed_madd (the relaxed-SIMD extension, on in Chromium since
// 114): one instruction, fused where the machine has FMA. The glue tries
// it first and keeps the plain module where it does not validate.
package wasmsimd
