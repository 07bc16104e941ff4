package dtype

import (
	"fmt"
	"math"
	"testing"
)

// TestScan: the bf16 scan, the f32 one and an installed kernel count the
// same non-finite values and sum the same squares (float32 sums of 256
// values: within 256·2⁻²⁴ relative).
func TestScan(t *testing.T) {
	x := make([]float32, 1000)
	for i := range x {
		x[i] = RoundBF16(float32(math.Sin(float64(i))))
	}
	x[3], x[500] = float32(math.NaN()), float32(math.Inf(-1))
	want := 0.0
	for _, v := range x {
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			want += float64(v) * float64(v)
		}
	}
	b := EncodeBF16(nil, x)
	calls := 0
	for _, c := range []struct {
		dt   string
		data []byte
		k    ScanKernel
	}{{"BF16", b, nil}, {"F32", EncodeF32(nil, x), nil}, {"BF16", b, func(b []byte) (int, float64) { calls++; return ScanBF16(b) }}} {
		if c.k != nil {
			ScanKernels.Install("counted", c.k)
		}
		nf, ss := Scan(c.dt, c.data, nil)
		ScanKernels.Reset()
		if nf != 2 || math.Abs(ss-want) > 256.0/(1<<24)*want {
			t.Errorf("%s (kernel %v): %d non-finite, Σx² = %g, want 2 and %g", c.dt, c.k != nil, nf, ss, want)
		}
	}
	if calls != 1 {
		t.Errorf("the installed kernel was called %d times", calls)
	}
}

func ExampleScan() {
	b := EncodeBF16(nil, []float32{3, 4, float32(math.NaN())})
	nonfinite, sumsq := Scan("BF16", b, nil)
	fmt.Println(nonfinite, sumsq, ScanKernels.Name())
	// Output: 1 25 go
}

// TestScanWide: bf16 values whose squares overflow float32 (2¹⁰⁰, finite
// in bf16) or are subnormal there (2⁻⁷⁰), with NaN and ±Inf among them:
// Scan, through whatever kernel is installed (the SIMD one under
// GOEXPERIMENT=simd), must give the exact sums n·2²⁰⁰ and n·2⁻¹⁴⁰, not
// +Inf or a sum that lost its digits, and count the non-finite values.
func TestScanWide(t *testing.T) {
	for _, e := range []float64{100, -70} {
		for _, n := range []int{1, 7, 8, 255, 256, 257, 4096 + 9} {
			x := make([]float32, 0, n+n/5+2)
			bad := 0
			for i := 0; i < n; i++ {
				x = append(x, float32(math.Exp2(e)))
				if i%5 == 0 {
					x = append(x, float32(math.Inf(1-2*(i%2))))
					bad++
				}
			}
			x = append(x, float32(math.NaN()))
			bad++
			want := float64(n) * math.Exp2(2*e)
			nf, ss := Scan("BF16", EncodeBF16(nil, x), nil)
			if nf != bad || ss != want {
				t.Errorf("2^%g × %d (kernel %s): %d non-finite, Σx² = %g; want %d and %g", e, n, ScanKernels.Name(), nf, ss, bad, want)
			}
		}
	}
	if !Wide(math.Inf(1)) || !Wide(0x1p-70) || Wide(0) || Wide(1) || Wide(0x1p-59) {
		t.Error("Wide: +Inf and 2⁻⁷⁰ are taken again in float64, 0, 1 and 2⁻⁵⁹ are not")
	}
}
