//go:build goexperiment.simd && amd64

package dtype

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"simd/archsimd"
	"testing"
)

// TestScanKernelsAgainstEachOther runs the AVX2 and AVX-512 scan kernels
// directly (not only the one the start-up check installed) against the
// portable loop and each other, on lengths from one vector to a whole
// tensor's worth with every kind of tail, on data with NaN, ±Inf,
// subnormals, zeros and values up to 4·10⁹ in every position (even and odd
// words of a lane): the counts exactly, Σx² within 10⁻⁶ relative (float32
// sums of at most 512 values per lane chain, added in float64). A kernel
// the CPU lacks is skipped, and said so.
func TestScanKernelsAgainstEachOther(t *testing.T) {
	ks := []struct {
		name string
		fn   ScanKernel
		has  bool
	}{
		{"avx2", scanBF16AVX2, archsimd.X86.AVX2() && archsimd.X86.FMA()},
		{"avx512", scanBF16AVX512, archsimd.X86.AVX512()},
	}
	rng := rand.New(rand.NewPCG(61, 62))
	special := []uint16{0x7fc0, 0xffc1, 0x7f80, 0xff80, 0x0001, 0x8001, 0x0000, 0x8000, 0x4f7f, 0xcf7f}
	for _, n := range []int{8, 56, 64, 72, 504, 512, 520, 1024 + 8, 4096, 65536 + 48, 1 << 20} {
		b := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			v := F32ToBF16(float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(20)-10))))
			if rng.IntN(30) == 0 {
				v = special[rng.IntN(len(special))]
			}
			binary.LittleEndian.PutUint16(b[2*i:], v)
		}
		wnf, wss := ScanBF16(b)
		for _, k := range ks {
			if !k.has {
				continue
			}
			nf, ss := k.fn(b)
			if nf != wnf || !(math.Abs(ss-wss) <= 1e-6*wss) {
				t.Errorf("%s, %d values: %d non-finite, Σx² = %.9g; the portable loop %d, %.9g", k.name, n, nf, ss, wnf, wss)
			}
		}
	}
	for _, k := range ks {
		if !k.has {
			t.Logf("scan kernel %s not tested: this CPU lacks it", k.name)
		}
	}
}

func BenchmarkScanKernels(b *testing.B) {
	buf := make([]byte, 8<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(buf); i += 2 {
		binary.LittleEndian.PutUint16(buf[i:], F32ToBF16(float32(rng.NormFloat64())))
	}
	for _, k := range []struct {
		name string
		fn   ScanKernel
		has  bool
	}{{"go", ScanBF16, true}, {"avx2", scanBF16AVX2, archsimd.X86.AVX2()}, {"avx512", scanBF16AVX512, archsimd.X86.AVX512()}} {
		if !k.has {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				k.fn(buf)
			}
		})
	}
}
