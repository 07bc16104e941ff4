package dtype

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// checkData is bf16 data of n values with NaN and ±Inf sprinkled in.
func checkData(rng *rand.Rand, n int) []byte {
	b := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		v := F32ToBF16(float32(rng.NormFloat64()))
		switch rng.IntN(50) {
		case 0:
			v = 0x7fc0 // NaN
		case 1:
			v = 0xff80 // −Inf
		case 2:
			v = 0x7f80 // +Inf
		}
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

// checkSizes are the value counts the checks use: one vector, several
// blocks of 256, a tail (all multiples of 8, as the kernels take).
var checkSizes = []int{8, 64, 256, 8 * 64 * 3, 8*64*3 + 40}

// CheckScanKernel compares a ScanKernel with ScanBF16 on data with NaN and
// ±Inf: the counts must be equal and Σx² within 10⁻⁵ relative (the float32
// sums round in a different order; a wrong kernel is off by far more).
func CheckScanKernel(candidate, portable ScanKernel) error {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, n := range checkSizes {
		b := checkData(rng, n)
		nf, ss := candidate(b)
		wnf, wss := portable(b)
		if nf != wnf || math.Abs(ss-wss) > 1e-5*wss || math.IsNaN(ss) {
			return fmt.Errorf("%d values: %d non-finite and Σx² = %g, the portable loop %d and %g", n, nf, ss, wnf, wss)
		}
	}
	return nil
}

// CheckDecodeKernel compares a BF16Kernel with the portable loop: every
// value bit for bit, and the count.
func CheckDecodeKernel(candidate, portable BF16Kernel) error {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, n := range checkSizes {
		b := checkData(rng, n)
		got, want := make([]float32, n+8), make([]float32, n+8)
		got[n], want[n] = 7, 7 // must stay
		nf := candidate(b, got[:n])
		wnf := portable(b, want[:n])
		if nf != wnf {
			return fmt.Errorf("%d values: %d non-finite, the portable loop %d", n, nf, wnf)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				return fmt.Errorf("%d values: value %d is %#x, the portable loop %#x", n, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
	return nil
}
