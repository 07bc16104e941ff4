package audit

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// rotatePair replaces the pair's factors by A' = Q·A, B' = B·Qᵀ (Q a
// random orthogonal r × r matrix, rounded to bf16): the same B·A, factors
// no longer in SVD form.
func (a *adapter) rotatePair(t *testing.T, module string) {
	ta, tb := a.find(t, module+".lora_A.weight"), a.find(t, module+".lora_B.weight")
	r, in, out := int(ta.Shape[0]), int(ta.Shape[1]), int(tb.Shape[0])
	fa, fb := make([]float32, r*in), make([]float32, out*r)
	dtype.Decode32("BF16", ta.Data, fa)
	dtype.Decode32("BF16", tb.Data, fb)
	rng := rand.New(rand.NewPCG(31, 32))
	m := mat.NewDense(r, r, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			m.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(m)
	var q mat.Dense
	qr.QTo(&q)
	a2, b2 := make([]float32, r*in), make([]float32, out*r)
	for i := 0; i < r; i++ {
		for c := 0; c < in; c++ {
			s := 0.0
			for k := 0; k < r; k++ {
				s += q.At(i, k) * float64(fa[k*in+c])
			}
			a2[i*in+c] = float32(s)
		}
	}
	for o := 0; o < out; o++ {
		for j := 0; j < r; j++ {
			s := 0.0
			for k := 0; k < r; k++ {
				s += float64(fb[o*r+k]) * q.At(j, k)
			}
			b2[o*r+j] = float32(s)
		}
	}
	ta.Data, tb.Data = dtype.EncodeBF16(nil, a2), dtype.EncodeBF16(nil, b2)
}

func matrixOf(t *testing.T, res *Result, module string) *Matrix {
	t.Helper()
	for _, m := range res.Matrices {
		if m.Module == module {
			return m
		}
	}
	t.Fatalf("no matrix %s", module)
	return nil
}

// TestDiagonalShortcutInAudit: the exact audit of the genuine demo adapter
// takes the diagonal shortcut for every pair (sigma_bound set, within
// spectral.DiagonalTolerance); a rotated pair — the same product, factors
// not in SVD form — goes to the eigensolver (no sigma_bound) and still
// gets its spectrum right (the report's σ within their tolerance: no
// report.mismatch; only the factor.form warning); a tampered pair (one
// direction of A scaled by 1.1: the Grams stay diagonal) takes the
// shortcut and fails against the report.
func TestDiagonalShortcutInAudit(t *testing.T) {
	res := run(t, load(t).write(t, 1), Options{Claims: demoClaims(t)})
	if res.Verdict != "pass" {
		t.Fatalf("genuine: %s %v", res.Verdict, res.Findings)
	}
	// The demo world's factors have a long side of 64 to 192: ρ is a few
	// 10⁻³ there, and about half the pairs are within the tolerance (the
	// twin's, with thousands, all are).
	taken, module, tensor, best := 0, "", "", 1.0
	for _, m := range res.Matrices {
		if m.Method != "gram" || m.SigmaBound != nil && *m.SigmaBound > 1.0/256 {
			t.Fatalf("genuine %s: method %s, sigma_bound %v", m.Module, m.Method, *m.SigmaBound)
		}
		if m.SigmaBound != nil {
			taken++
			if m.Large && *m.SigmaBound < best {
				module, best = m.Module, *m.SigmaBound // the most margin
			}
		}
	}
	t.Logf("genuine: the shortcut taken for %d of %d pairs; tampering with %s", taken, len(res.Matrices), module)
	if module == "" {
		t.Fatal("no large pair took the shortcut")
	}
	tensor = "base_model.model." + module

	a := load(t)
	a.rotatePair(t, tensor)
	res = run(t, a.write(t, 1), Options{Claims: demoClaims(t)})
	m := matrixOf(t, res, module)
	if m.SigmaBound != nil || m.Method != "gram" {
		t.Fatalf("rotated: method %s, sigma_bound %v: the shortcut was taken", m.Method, *m.SigmaBound)
	}
	if got := codes(res, report.Fail); len(got) != 0 {
		t.Fatalf("rotated: failures %v (%v)", got, res.Findings)
	}
	if got := codes(res, report.Warn); len(got) != 1 || got[0] != string(report.FactorForm) {
		t.Fatalf("rotated: warnings %v, want only %s", got, report.FactorForm)
	}
	if m.ReportSV == nil || *m.ReportSV > 0.5 {
		t.Fatalf("rotated: σ against the report %v (tolerance units)", m.ReportSV)
	}

	a = load(t)
	x := a.find(t, tensor+".lora_A.weight")
	vals := make([]float32, len(x.Data)/2)
	dtype.Decode32("BF16", x.Data, vals)
	in := int(x.Shape[1])
	for c := 0; c < in; c++ {
		vals[2*in+c] *= 1.1 // row 2 of A: σ₃ grows by 10%
	}
	x.Data = dtype.EncodeBF16(nil, vals)
	res = run(t, a.write(t, 1), Options{Claims: demoClaims(t)})
	m = matrixOf(t, res, module)
	if m.SigmaBound == nil {
		t.Fatalf("tampered: the Grams are still diagonal, but the shortcut was not taken")
	}
	if res.Verdict != "fail" || !hasFinding(res, report.ReportMismatch, module) {
		t.Fatalf("tampered: verdict %s, findings %v", res.Verdict, res.Findings)
	}
	if math.IsNaN(*m.SigmaBound) {
		t.Fatal("NaN bound")
	}
}

func hasFinding(res *Result, code report.Code, subject string) bool {
	for _, f := range res.Findings {
		if f.Code == code && f.Subject == subject {
			return true
		}
	}
	return false
}

// TestCheckRefDecidesShortcut: a Session with no report of its own (a
// browser pool worker's) takes the σ it is given (Session.CheckRef) as the
// report's. With a pair's own σ as the reference the shortcut decides the
// comparison; with a reference at the edge of the tolerance, where the
// shortcut's bound leaves it undecided, the pair goes to the eigensolver —
// as it would in the audit holding that report. Without a reference
// nothing is compared and the shortcut is taken.
func TestCheckRefDecidesShortcut(t *testing.T) {
	dir := load(t).write(t, 1)
	res := run(t, dir, Options{Claims: demoClaims(t)})
	module := ""
	for _, m := range res.Matrices {
		if m.SigmaBound != nil && *m.SigmaBound > 0 && m.Sigma[0] > 0 {
			module = m.Module
			break
		}
	}
	if module == "" {
		t.Fatal("no pair took the shortcut")
	}
	sess, err := Open(source.Dir(dir), ".", Options{Claims: demoClaims(t), NoAutoReport: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	f, err := sess.CheckRef(module, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.SigmaBound == nil {
		t.Fatalf("no reference: the shortcut was not taken (method %s)", f.Method)
	}
	own := append([]float64(nil), f.Sigma...)
	if f, err = sess.CheckRef(module, own); err != nil || f.SigmaBound == nil {
		t.Fatalf("its own σ as reference: shortcut not taken (%v, method %s)", err, f.Method)
	}
	// σ₁ off by exactly the tolerance: the bound ±b·σ₁ straddles it.
	tol := Default
	edge := append([]float64(nil), own...)
	edge[0] = own[0] / (1 + tol.SigmaRel + tol.SigmaAbs)
	f, err = sess.CheckRef(module, edge)
	if err != nil {
		t.Fatal(err)
	}
	if f.SigmaBound != nil {
		t.Fatalf("reference at the tolerance's edge: the shortcut was taken (bound %g)", *f.SigmaBound)
	}
	if math.Abs(f.Sigma[0]-own[0]) > 1.0/256*own[0] {
		t.Fatalf("the eigensolver's σ₁ %g, the shortcut's %g", f.Sigma[0], own[0])
	}
	// The reference is for that call only: the next has none.
	if f, err = sess.Check(module); err != nil || f.SigmaBound == nil {
		t.Fatalf("after CheckRef: the reference stayed (%v, method %s)", err, f.Method)
	}
	if _, err := sess.CheckRef("nope", own); err == nil {
		t.Error("CheckRef accepted a module the adapter does not have")
	}
}
