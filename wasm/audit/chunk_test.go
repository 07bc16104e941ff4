package audit

import (
	"context"
	"math"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// TestQuickReadChunk: a quick audit with ReadChunk (natively, of local
// files) reads the factors in pieces of at most that size and gives the
// figures of the audit that reads each pair whole: the same verdict, the
// same non-finite counts (NaN and ±Inf planted at a piece's first and
// last value and between), the same norms within 10⁻⁶ relative (float32
// sums of at most 256 values whose blocks now start at each piece). Pieces
// of an odd size (1000 bytes: not whole vectors of 8 values) and of 256
// KiB (the native host's).
func TestQuickReadChunk(t *testing.T) {
	a := load(t)
	x := &a.tensors[0]
	planted := map[int]bool{}
	for _, at := range []int{0, 998, 1000, 4094, len(x.Data) - 2} {
		if at+2 <= len(x.Data) {
			x.Data[at], x.Data[at+1] = 0xc0, 0x7f // NaN
			planted[at] = true
		}
	}
	y := &a.tensors[len(a.tensors)-1]
	y.Data[len(y.Data)-2], y.Data[len(y.Data)-1] = 0x80, 0xff // −Inf
	dir := a.write(t, 2)
	want := run(t, dir, Options{Mode: report.ModeQuick, NoAutoReport: true})
	var nf int
	for _, m := range want.Matrices {
		nf += m.Nonfinite
	}
	if nf != len(planted)+1 || want.Verdict != "fail" {
		t.Fatalf("the whole reads found %d non-finite values (want %d), verdict %s", nf, len(planted)+1, want.Verdict)
	}
	for _, chunk := range []int64{1000, 256 << 10} {
		l := &readLog{FS: source.Dir(dir)}
		got, err := Run(context.Background(), l, ".", Options{Mode: report.ModeQuick, NoAutoReport: true, ReadChunk: chunk})
		if err != nil {
			t.Fatal(err)
		}
		if got.Verdict != want.Verdict || len(got.Findings) != len(want.Findings) {
			t.Errorf("chunk %d: verdict %s with %d findings, want %s with %d", chunk, got.Verdict, len(got.Findings), want.Verdict, len(want.Findings))
		}
		for i, m := range got.Matrices {
			w := want.Matrices[i]
			if m.Module != w.Module || m.Nonfinite != w.Nonfinite || !(math.Abs(m.NormA-w.NormA) <= 1e-6*w.NormA) || !(math.Abs(m.NormB-w.NormB) <= 1e-6*w.NormB) {
				t.Errorf("chunk %d, %s: %d non-finite, ‖A‖ %g, ‖B‖ %g; whole: %s %d, %g, %g", chunk, m.Module, m.Nonfinite, m.NormA, m.NormB, w.Module, w.Nonfinite, w.NormA, w.NormB)
			}
		}
		var pieces, over int
		for _, s := range l.sizes {
			if int64(s) == chunk {
				pieces++
			}
			if int64(s) > chunk && s > 64<<10 { // the header's reads are its own
				over++
			}
		}
		if over > 0 || (chunk == 1000 && pieces == 0) {
			t.Errorf("chunk %d: %d reads of exactly a piece, %d larger (of %d)", chunk, pieces, over, len(l.sizes))
		}
	}
}
