package spectral

import "fmt"

// Bounds of the exact (Gram) route. Its memory grows as r², whatever the
// factors hold: a 294-byte adapter whose factors are [16384, 0] and
// [0, 16384] once asked for 8 GB of Grams. So the route takes a pair only
// when r is at most MaxGramRank and its buffers are justified by the
// factors' own bytes.
const (
	// MaxGramRank is the largest r the exact route takes. At r = 4096 the
	// two Grams and the spectrum's work need GramMemory(4096) ≈ 800 MB;
	// every LoRA adapter published so far is far below (Clef's r is 256).
	MaxGramRank = 4096
	// GramFreeBytes is the Gram memory any pair may use whatever its size
	// (r up to ~1,180: every ordinary adapter).
	GramFreeBytes = 64 << 20
	// GramPerFactorByte is, beyond GramFreeBytes, how many bytes of Gram
	// memory one byte of factor data justifies: a real r = 4096 factor
	// pair of a 5120 × 17408 module holds 185 MB, its Grams 800 MB.
	GramPerFactorByte = 8
)

// GramMemory is an upper bound on the bytes the exact route allocates for
// one pair of rank r: the two Grams (stride² float64 each, stride = r
// rounded up to 16) and the spectrum's pivoted Cholesky, permuted Gram and
// products (at most 4·r² float64 together).
func GramMemory(r int) int64 {
	s := int64((r + 15) &^ 15)
	return 8 * (2*s*s + 4*int64(r)*int64(r))
}

// GramAllowed says why the exact route may not take a pair of rank r whose
// two factors hold factorBytes bytes (nil: it may).
func GramAllowed(r int, factorBytes int64) error {
	if r > MaxGramRank {
		return fmt.Errorf("r = %d is above the %d the exact Gram route takes (spectral.MaxGramRank)", r, MaxGramRank)
	}
	need := GramMemory(r)
	if need > GramFreeBytes && need > GramPerFactorByte*factorBytes {
		return fmt.Errorf("r = %d needs %d MB of Gram memory, more than the factors' %d bytes justify (%d× their size, spectral.GramPerFactorByte, beyond %d MB free)",
			r, need>>20, factorBytes, GramPerFactorByte, GramFreeBytes>>20)
	}
	return nil
}

// MaxWideWork bounds the float64 route's work (Gram.AddWide: gonum's
// portable dsyrk, 1–2·10⁹ multiply-adds a second): r²·n/2 for an r × n
// factor, about 10 s at 2·10¹⁰. The real adapter's largest factor (r = 256,
// 17408 long) needs 5.7·10⁸; a factor beyond the bound (a hostile sparse
// file of gigabytes with one huge value) is scanned for its norm and its
// spectrum left unchecked, said so (limit.exceeded). A variable for the
// tests.
var MaxWideWork = 2e10

// WideAllowed says why the float64 route may not take an r × n factor (nil:
// it may).
func WideAllowed(r int, n int64) error {
	if w := float64(r) * float64(r) * float64(n) / 2; w > MaxWideWork {
		return fmt.Errorf("its Gram in float64 would take %.3g multiply-adds, more than the %.3g the route takes (spectral.MaxWideWork)", w, MaxWideWork)
	}
	return nil
}
