// Package dtype decodes tensor bytes (little-endian) into float32 or float64
// and scans them for NaN and ±Inf.
//
// BF16 is the top half of an IEEE float32, so widening it is a shift and is
// exact; F16 goes through github.com/x448/float16, also exact. F64 to float32
// rounds to nearest. Integer types convert exactly to float64; to float32 when
// they fit 24 bits.
//
// # Scans
//
// Scan counts a tensor's non-finite values and sums the squares of the
// others, ‖x‖²_F without the NaN and ±Inf, for the audit's quick mode. For
// bf16 data a value is non-finite when its exponent bits are all ones
// (u & 0x7f80 == 0x7f80); the squares of the others are exact in float32
// (8-bit significands square into 16 bits) unless they leave float32's
// range (|x| beyond about 1.8·10¹⁹ or below 10⁻¹⁹), and they are summed in float32
// over blocks of 256 values, the blocks' sums added in float64. A block's
// sum errs by at most 256·2⁻²⁴ ≈ 1.5·10⁻⁵ of itself; the float64
// additions add nothing measurable. Other dtypes are decoded to float32 in
// chunks of 4096 values and their squares summed in float64.
//
// # Kernels
//
// Two inner loops are swappable (package kernels): ScanKernels, the bf16
// scan over whole vectors of 8 values, and DecodeKernels, Decode32's bf16
// case. Their portable Go loops are ScanBF16 and the loop inside Decode32;
// the browser's engine workers install WebAssembly SIMD kernels after
// checking them against these. An installed scan kernel gets the bulk of a
// tensor (a multiple of 16 bytes) and the portable loop the tail; its sums
// may differ from the portable ones in rounding only (float32 sums in
// another order, within the block bound above), its counts not at all.
package dtype
