package spectral

import "testing"

// TestColumnKernels: the transposing bf16 decode of every kernel built in
// passes the start-up check, and the check rejects a wrong kernel.
func TestColumnKernels(t *testing.T) {
	for _, c := range ColumnKernels.Candidates() {
		if err := CheckColumnKernel(c.Fn, bf16ColumnsGo); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	wrong := func(src []byte, pitch int, p []float32, rows, k int) int {
		nf := bf16ColumnsGo(src, pitch, p, rows, k)
		p[PanelAt(k-1, rows-1)] = 0
		return nf
	}
	if CheckColumnKernel(wrong, bf16ColumnsGo) == nil {
		t.Error("a wrong column kernel passed")
	}
	t.Logf("column kernels %v, active %s", ColumnKernels.Names(), ColumnKernels.Name())
}

// TestRowKernels: the row decode of every kernel built in passes the
// start-up check, and the check rejects a wrong kernel.
func TestRowKernels(t *testing.T) {
	for _, c := range RowKernels.Candidates() {
		if err := CheckRowKernel(c.Fn, bf16RowsGo); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	wrong := func(src []byte, pitch int, p []float32, k, n int) int {
		nf := bf16RowsGo(src, pitch, p, k, n)
		p[PanelAt(k-1, n-1)] = 1 // the last row's last value
		return nf
	}
	if CheckRowKernel(wrong, bf16RowsGo) == nil {
		t.Error("a wrong row kernel passed")
	}
	pitchless := func(src []byte, pitch int, p []float32, k, n int) int { // ignores the pitch
		return bf16RowsGo(src, 2*n, p, k, n)
	}
	if CheckRowKernel(pitchless, bf16RowsGo) == nil {
		t.Error("a row kernel that ignores the pitch passed")
	}
	t.Logf("row kernels %v, active %s", RowKernels.Names(), RowKernels.Name())
}
