package dtype

import (
	"testing"
)

// TestNativeKernelsAgree: every bf16 kernel built in (AVX2 under
// GOEXPERIMENT=simd on amd64) passes the start-up check against the
// portable loop, and the checks reject a wrong kernel.
func TestNativeKernelsAgree(t *testing.T) {
	for _, c := range ScanKernels.Candidates() {
		if err := CheckScanKernel(c.Fn, ScanBF16); err != nil {
			t.Errorf("scan kernel %s: %v", c.Name, err)
		}
	}
	for _, c := range DecodeKernels.Candidates() {
		if err := CheckDecodeKernel(c.Fn, decodeBF16Portable); err != nil {
			t.Errorf("decode kernel %s: %v", c.Name, err)
		}
	}
	if err := CheckScanKernel(ScanBF16, ScanBF16); err != nil {
		t.Fatal(err)
	}
	if err := CheckDecodeKernel(decodeBF16Portable, decodeBF16Portable); err != nil {
		t.Fatal(err)
	}
	wrongScan := func(b []byte) (int, float64) { nf, ss := ScanBF16(b); return nf, ss * (1 + 1e-4) }
	if CheckScanKernel(wrongScan, ScanBF16) == nil {
		t.Error("a scan kernel off by 10⁻⁴ passed")
	}
	wrongCount := func(b []byte) (int, float64) { nf, ss := ScanBF16(b); return nf + 1, ss }
	if CheckScanKernel(wrongCount, ScanBF16) == nil {
		t.Error("a scan kernel miscounting passed")
	}
	wrongDecode := func(src []byte, dst []float32) int {
		nf := decodeBF16Portable(src, dst)
		dst[len(dst)-1] = 0
		return nf
	}
	if CheckDecodeKernel(wrongDecode, decodeBF16Portable) == nil {
		t.Error("a decode kernel with a wrong value passed")
	}
	t.Logf("scan %v (active %s), decode %v (active %s)", ScanKernels.Names(), ScanKernels.Name(), DecodeKernels.Names(), DecodeKernels.Name())
}
