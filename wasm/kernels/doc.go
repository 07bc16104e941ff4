// Package kernels is the one registry of the engine's swappable inner
// loops: the bf16 scan and decode of package dtype, the Gram panel update
// and the randomized probes' loops of package spectral.
//
// Each swappable loop is a Slot: a portable Go implementation (named "go"),
// which is always there and always correct, and any number of named
// candidates. One kernel per slot is active. A candidate becomes active
//
//   - at start-up, chosen by CPU features: under GOEXPERIMENT=simd on amd64
//     with AVX2 and FMA, package spectral installs its archsimd Gram kernel
//     ("avx2") after checking it against the portable one (Try);
//   - at run time, from outside: the browser's engine workers compile
//     WebAssembly SIMD kernels, check each against its portable loop and
//     install them ("wasm-simd") with Install.
//
// Reset returns a slot to its portable kernel. List and String say what is
// active where (the audit's Summary.Kernel is built from the active names).
//
// The registry lives in its own package, below dtype and spectral, because
// both register slots and spectral imports dtype: inside either one it
// would force an import cycle or a dependency that is not about numbers.
// It imports nothing but the standard library.
//
// Switching is meant for start-up and tests: the hot paths read the active
// kernel with one atomic load, so a switch is safe at any time, but a
// computation that straddles it may use both kernels (both compute the same
// thing within the slot's stated tolerance).
package kernels
