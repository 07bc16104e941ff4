package audit

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/kernels"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// Factors whose values are finite in bf16 but whose squares are not in
// float32 (|x| ≥ 2⁶⁴), or so small that their squares are subnormal there:
// the float32 Grams overflow (or lose their digits), and the audit takes
// those factors' Grams again in float64 (spectral.Gram.AddWide).

// TestWideRebalancedPair scales one pair of the demo adapter as A·2ᵃ and
// B·2ᵇ (exact in bf16: powers of two), so that ΔW = 2ᵃ⁺ᵇ·ΔW: every σ must
// be 2ᵃ⁺ᵇ times the unscaled audit's and the norms scaled likewise, in the
// exact and randomized modes, and the quick scan's norms too. A·2⁷⁰
// overflows the float32 Gram; B·2⁻⁶⁸ makes B's squares subnormal there.
func TestWideRebalancedPair(t *testing.T) {
	testWideRebalanced(t)
}

// TestWideRebalancedProbes is TestWideRebalancedPair with the randomized
// probes taken as in the browser (a probe kernel installed: the portable
// loops under another name, so that they pay): their float32 figures
// overflow on such factors, and the exact route must decide.
func TestWideRebalancedProbes(t *testing.T) {
	spectral.ProbeKernels.Install("portable, as installed", spectral.Kernels{Name: "portable, as installed"})
	defer spectral.ProbeKernels.Reset()
	testWideRebalanced(t)
}

func testWideRebalanced(t *testing.T) {
	const module = "model.language_model.layers.41.mlp.gate_proj"
	plain := load(t)
	plain.report = nil
	base := plain.write(t, 1)
	for _, sc := range [][2]float64{{70, -40}, {20, -68}, {70, -68}} {
		a := load(t)
		a.report = nil
		a.scale(t, "base_model.model."+module+".lora_A.weight", math.Exp2(sc[0]))
		a.scale(t, "base_model.model."+module+".lora_B.weight", math.Exp2(sc[1]))
		dir := a.write(t, 1)
		f := math.Exp2(sc[0] + sc[1])
		for _, mode := range []report.Mode{report.ModeQuick, report.ModeExact, report.ModeRandomized} {
			want := byModule(run(t, base, Options{Mode: mode, NoAutoReport: true}))[module]
			got := byModule(run(t, dir, Options{Mode: mode, NoAutoReport: true}))[module]
			if want == nil || got == nil {
				t.Fatalf("%v %s: no figures for %s", sc, mode, module)
			}
			if spectral.ProbeKernels.Name() != kernels.Portable && mode == report.ModeRandomized && (want.Method != "probes" || got.Method != "gram") {
				t.Errorf("%v: methods %q and %q, want the probes for the plain pair and the Grams for the scaled one", sc, want.Method, got.Method)
			}
			near(t, mode, "‖A‖_F", got.NormA, math.Exp2(sc[0])*want.NormA, 1e-6)
			near(t, mode, "‖B‖_F", got.NormB, math.Exp2(sc[1])*want.NormB, 1e-6)
			if mode == report.ModeQuick {
				continue
			}
			if len(got.Sigma) != len(want.Sigma) || len(want.Sigma) == 0 {
				t.Fatalf("%v %s: %d singular values, want %d", sc, mode, len(got.Sigma), len(want.Sigma))
			}
			// Float64 Grams here, float32 panels added in float64 there:
			// within the panel bound (4·10⁻⁶ of an entry, half that of a
			// σ); a σ far below σ₁ is known to 10⁻⁵·σ₁ (the Grams square it).
			s1 := f * want.Sigma[0]
			for i := range want.Sigma {
				if w := f * want.Sigma[i]; !(math.Abs(got.Sigma[i]-w) <= 1e-5*(w+s1)) {
					t.Errorf("%v %s: σ%d = %.9g, want %.9g (2ᵃ⁺ᵇ × the unscaled audit's)", sc, mode, i+1, got.Sigma[i], w)
				}
			}
			if got.NumRank != want.NumRank {
				t.Errorf("%v %s: numerical rank %d, want %d", sc, mode, got.NumRank, want.NumRank)
			}
		}
	}
}

// TestWideStreamedFactor: a streamed pair (A is 16 × 2²⁰ bf16, 32 MiB, in
// a sparse file) with A[0][5] = A[1][700000] = 2⁷⁰ and B = the first two
// columns of the identity: ΔW has σ₁ = σ₂ = 2⁷⁰ and no other, which the
// float32 Gram of A (entries 2¹⁴⁰) cannot hold. The exact audit streams A
// again through the float64 route and must give exactly that.
func TestWideStreamedFactor(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 32 MiB")
	}
	dir := wideStreamed(t)
	const r = 16
	for _, mode := range []report.Mode{report.ModeQuick, report.ModeExact} {
		res := run(t, dir, Options{Mode: mode, NoAutoReport: true})
		if len(res.Matrices) != 1 || res.Matrices[0].Skipped != "" {
			t.Fatalf("%s: the pair was not checked: %+v %v", mode, res.Matrices, res.Findings)
		}
		m := res.Matrices[0]
		near(t, mode, "‖A‖_F", m.NormA, math.Sqrt2*math.Exp2(70), 1e-12)
		near(t, mode, "‖B‖_F", m.NormB, math.Sqrt2, 1e-12)
		if mode == report.ModeQuick {
			continue
		}
		if len(m.Sigma) != r {
			t.Fatalf("%s: %d singular values, want %d", mode, len(m.Sigma), r)
		}
		near(t, mode, "σ₁", m.Sigma[0], math.Exp2(70), 1e-12)
		near(t, mode, "σ₂", m.Sigma[1], math.Exp2(70), 1e-12)
		if m.Sigma[2] != 0 || m.NumRank != 2 {
			t.Errorf("%s: σ₃ = %g, numerical rank %d; want 0 and 2", mode, m.Sigma[2], m.NumRank)
		}
		for _, f := range res.Findings {
			if f.Code == report.ValuesNonfinite {
				t.Errorf("%s: %s: %s (every value is finite)", mode, f.Code, f.Message)
			}
		}
	}
}

// wideStreamed writes TestWideStreamedFactor's adapter and returns its folder.
func wideStreamed(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	const r, in, out = 16, 1 << 20, 16
	h, size := pairHeader(r, in, out)
	path := filepath.Join(dir, "adapter_model.safetensors")
	writeST(t, path, h, size)
	writeConfig(t, dir, r, r)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	data := int64(8 + len(h))
	put := func(at int64, v float32) {
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], dtype.F32ToBF16(v))
		if _, err := f.WriteAt(b[:], data+2*at); err != nil {
			t.Fatal(err)
		}
	}
	big := float32(math.Exp2(70))
	put(0*in+5, big)
	put(1*in+700000, big)
	put(r*in+0*r+0, 1) // B[0][0]
	put(r*in+1*r+1, 1) // B[1][1]
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWideLimit: beyond spectral.MaxWideWork (lowered here to 10⁶) the
// float64 route is not taken: the factor of TestWideStreamedFactor is
// scanned again for its norm, which is right, and its spectrum is left
// unchecked, said so with limit.exceeded (fail), never values.nonfinite.
func TestWideLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 32 MiB")
	}
	old := spectral.MaxWideWork
	spectral.MaxWideWork = 1e6
	defer func() { spectral.MaxWideWork = old }()
	res := run(t, wideStreamed(t), Options{Mode: report.ModeExact, NoAutoReport: true})
	if len(res.Matrices) != 1 {
		t.Fatalf("%d pairs", len(res.Matrices))
	}
	m := res.Matrices[0]
	near(t, report.ModeExact, "‖A‖_F", m.NormA, math.Sqrt2*math.Exp2(70), 1e-12)
	if m.Sigma != nil {
		t.Errorf("a spectrum beyond the limit: %v", m.Sigma[:2])
	}
	wantFinding(t, res.Outcome, report.LimitExceeded, report.Fail, "beyond float32's range")
	for _, f := range res.Findings {
		if f.Code == report.ValuesNonfinite {
			t.Errorf("%s: %s (every value is finite)", f.Code, f.Message)
		}
	}
}

func byModule(res *Result) map[string]*report.AuditMatrix {
	out := map[string]*report.AuditMatrix{}
	for i := range res.Matrices {
		out[res.Matrices[i].Module] = res.Matrices[i]
	}
	return out
}

func near(t *testing.T, mode report.Mode, what string, got, want, rel float64) {
	t.Helper()
	if !(math.Abs(got-want) <= rel*math.Abs(want)) {
		t.Errorf("%s: %s = %.9g, want %.9g (relative tolerance %.1g)", mode, what, got, want, rel)
	}
}
