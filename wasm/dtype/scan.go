package dtype

import (
	"math"

	"github.com/kvit-s/clefcheck/wasm/kernels"
)

// ScanKernel counts the non-finite values of bf16 data b (a multiple of 16
// bytes: whole vectors of 8 values) and sums the squares of the others, as
// ScanBF16 does.
type ScanKernel func(b []byte) (nonfinite int, sumsq float64)

// BF16Kernel decodes bf16 values (a multiple of 8 of them) and counts the
// non-finite ones, as Decode32 does.
type BF16Kernel func(src []byte, dst []float32) (nonfinite int)

// The swappable loops of this package (see package kernels): ScanKernels
// for Scan's bf16 case, DecodeKernels for Decode32's.
var (
	ScanKernels   = kernels.NewSlot[ScanKernel]("bf16-scan", ScanBF16)
	DecodeKernels = kernels.NewSlot[BF16Kernel]("bf16-decode", decodeBF16Portable)
)

// Scan decodes a tensor of dtype dt, counting non-finite values and summing
// the squares of the others. scratch is reused between calls (nil is fine).
func Scan(dt string, b []byte, scratch *[]float32) (nonfinite int, sumsq float64) {
	if dt == "BF16" {
		return scanBF16(b)
	}
	if scratch == nil {
		scratch = new([]float32)
	}
	sz := Size(dt)
	const chunk = 4096
	if cap(*scratch) < chunk {
		*scratch = make([]float32, chunk)
	}
	for off := 0; off < len(b); off += chunk * sz {
		end := min(len(b), off+chunk*sz)
		n := (end - off) / sz
		nf, _ := Decode32(dt, b[off:end], (*scratch)[:n])
		nonfinite += nf
		sumsq += sumSquares((*scratch)[:n])
	}
	return nonfinite, sumsq
}

func sumSquares(x []float32) float64 {
	s := 0.0
	for _, v := range x {
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			s += float64(v) * float64(v)
		}
	}
	return s
}

// ScanBF16 counts the non-finite values of bf16 data and sums the squares
// of the others (float32 sums of 256 values added in float64): the
// portable loop, the reference an installed ScanKernel is checked against.
func ScanBF16(b []byte) (nonfinite int, sumsq float64) {
	n := len(b) / 2
	for i0 := 0; i0 < n; i0 += 256 {
		end := min(n, i0+256)
		var s float32
		for i := i0; i < end; i++ {
			u := uint32(b[2*i]) | uint32(b[2*i+1])<<8
			if u&0x7f80 == 0x7f80 {
				nonfinite++
				continue
			}
			f := math.Float32frombits(u << 16)
			s += f * f
		}
		sumsq += float64(s)
	}
	return nonfinite, sumsq
}

// scanBF16 is Scan's bf16 path: an installed kernel for whole vectors of
// 8 values and the portable loop for the rest; the portable loop alone
// when no kernel is installed.
func scanBF16(b []byte) (nonfinite int, sumsq float64) {
	if k, portable := ScanKernels.Current(); !portable && len(b) >= 16 {
		bulk := len(b) / 16 * 16
		nf, ss := k(b[:bulk])
		nf2, ss2 := ScanBF16(b[bulk:])
		nonfinite, sumsq = nf+nf2, ss+ss2
	} else {
		nonfinite, sumsq = ScanBF16(b)
	}
	if Wide(sumsq) {
		sumsq = SumSquaresBF16(b)
	}
	return nonfinite, sumsq
}

// Wide reports whether a Σx² summed in float32 blocks must be taken again
// in float64. The kernels' float32 sums overflow once a square or a
// block's sum passes 3.4·10³⁸ (|x| ≳ 1.8·10¹⁹, finite in bf16): non-finite
// values are skipped, so +Inf means exactly that. At the other end, squares
// below 2⁻¹²⁶ (|x| < 2⁻⁶³) lose their digits as subnormals: a non-zero sum
// below 2⁻⁶⁰ may be mostly such squares. (A sum above it loses less than
// 2⁻³² of itself to them. A sum that is exactly zero is taken as it is:
// data whose every value is below 2⁻⁶³ reads as zero.)
func Wide(sumsq float64) bool {
	return math.IsInf(sumsq, 1) || (sumsq > 0 && sumsq < 0x1p-60)
}

// SumSquaresBF16 sums the squares of the finite bf16 values of b in
// float64: the slow route for data whose float32 block sums overflow (a
// bf16 value's square is at most 1.2·10⁷⁷, so no float64 sum of a file's
// values overflows).
func SumSquaresBF16(b []byte) float64 {
	s := 0.0
	for i := 0; i+1 < len(b); i += 2 {
		u := uint32(b[i]) | uint32(b[i+1])<<8
		if u&0x7f80 == 0x7f80 {
			continue
		}
		f := float64(math.Float32frombits(u << 16))
		s += f * f
	}
	return s
}

// decodeBF16Portable widens bf16 src into dst (len(dst) values) and counts
// the non-finite ones: Decode32's portable bf16 loop.
func decodeBF16Portable(src []byte, dst []float32) (nonfinite int) {
	for i := range dst {
		u := uint32(src[2*i]) | uint32(src[2*i+1])<<8
		u <<= 16
		if u&0x7f800000 == 0x7f800000 {
			nonfinite++
		}
		dst[i] = math.Float32frombits(u)
	}
	return nonfinite
}
