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
