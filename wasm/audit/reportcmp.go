package audit

import (
	"math"

	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/report"
)

func (a *auditor) compareReport() {
	rep := a.rep
	if rep == nil {
		return
	}
	name := a.res.Summary.Report
	tol := a.opt.Tol
	if a.cfg != nil && rep.Rank != 0 && rep.Rank != a.cfg.R {
		a.c.Addf(report.ReportMismatch, report.Fail, name, rep.Rank, a.cfg.R, "the report's rank is %d, the config's r is %d", rep.Rank, a.cfg.R)
	}
	if rep.DType != "" {
		for dt, n := range a.res.Summary.DTypes {
			if dt != rep.DType {
				a.c.Addf(report.ReportMismatch, report.Fail, name, dt, rep.DType, "%d tensors are %s, the report says %s", n, dt, rep.DType)
			}
		}
	}
	if rep.TensorsDiffering != nil && *rep.TensorsDiffering != a.res.Summary.Pairs {
		a.c.Addf(report.ReportMismatch, report.Fail, name, a.res.Summary.Pairs, *rep.TensorsDiffering, "the report counts %d differing tensors, the adapter has %d pairs", *rep.TensorsDiffering, a.res.Summary.Pairs)
	}
	if p := a.opt.Claims; p != nil && rep.TensorsCompared != nil && p.TensorsCompared > 0 && *rep.TensorsCompared != p.TensorsCompared {
		a.c.Addf(report.ReportMismatch, report.Fail, name, *rep.TensorsCompared, p.TensorsCompared, "the report compared %d tensors, the claims say %d", *rep.TensorsCompared, p.TensorsCompared)
	}
	if p := a.opt.Claims; p != nil {
		if rep.Base.Repo != "" && (rep.Base != p.Base) {
			a.c.Addf(report.ReportMismatch, report.Fail, name, rep.Base, p.Base, "the report's base is %s@%s, the claims say %s@%s", rep.Base.Repo, rep.Base.Revision, p.Base.Repo, p.Base.Revision)
		}
		if rep.Tuned.Repo != "" && (rep.Tuned != p.Tuned) {
			a.c.Addf(report.ReportMismatch, report.Fail, name, rep.Tuned, p.Tuned, "the report's tuned model is %s@%s, the claims say %s@%s", rep.Tuned.Repo, rep.Tuned.Revision, p.Tuned.Repo, p.Tuned.Revision)
		}
	}
	seen := map[string]bool{}
	for i := range rep.Matrices {
		x := &rep.Matrices[i]
		seen[x.Module] = true
		m := a.byName[x.Module]
		if m == nil {
			if a.opt.Claims != nil {
				a.c.Addf(report.ReportMismatch, report.Fail, x.Module, nil, nil, "the report lists a module the adapter has no pair for")
			}
			continue
		}
		if len(x.Shape) == 2 && m.Skipped != "shape" && (x.Shape[0] != m.Out || x.Shape[1] != m.In) {
			a.c.Addf(report.ReportMismatch, report.Fail, x.Module, []int{m.Out, m.In}, x.Shape, "ΔW is %d × %d, the report says %v", m.Out, m.In, x.Shape)
		}
		a.claimedFidelity(x, m)
		if x.ResidualToNoise != nil {
			v := *x.ResidualToNoise
			m.ReportR2N = &v
		}
		if m.Sigma == nil {
			continue
		}
		if len(x.SingularValues) > 0 {
			worst, at := 0.0, -1
			ref0 := x.SingularValues[0]
			for j := 0; j < len(x.SingularValues) && j < len(m.Sigma); j++ {
				ref := x.SingularValues[j]
				allowed := tol.SigmaRel*math.Abs(ref) + tol.SigmaAbs*math.Abs(ref0)
				d := math.Abs(m.Sigma[j]-ref) / allowed
				if math.IsNaN(d) || allowed == 0 {
					d = math.Inf(1)
				}
				if d > worst || at < 0 {
					worst, at = d, j
				}
			}
			m.ReportSV = &worst
			m.ReportSigma = x.SingularValues
			if at >= 0 && worst > 1 {
				a.c.Addf(report.ReportMismatch, report.Fail, x.Module, m.Sigma[at], x.SingularValues[at],
					"σ%d = %.6g, the report says %.6g (off by %.3g%%, tolerance %.2f%% + %.3g·σ₁)", at+1, m.Sigma[at], x.SingularValues[at],
					100*math.Abs(m.Sigma[at]-x.SingularValues[at])/math.Abs(x.SingularValues[at]), 100*tol.SigmaRel, tol.SigmaAbs)
			}
			if len(x.SingularValues) != m.Rank {
				a.c.Addf(report.ReportMismatch, report.Warn, x.Module, len(x.SingularValues), m.Rank, "the report lists %d singular values for r = %d", len(x.SingularValues), m.Rank)
			}
		}
		if x.DeltaFro != nil {
			// ‖D‖² = ‖B·A‖² + ‖D − B·A‖² when B·A is D's best rank-r
			// approximation; without the residual, ‖B·A‖ ≤ ‖D‖.
			want := *x.DeltaFro
			if x.ResidualFro != nil {
				want = math.Sqrt(max(0, want*want-*x.ResidualFro**x.ResidualFro))
			}
			dev := (m.Fro - want) / (tol.FroRel * want)
			if x.ResidualFro == nil && dev < 0 {
				dev = 0
			}
			ad := math.Abs(dev)
			m.ReportFro = &ad
			if ad > 1 || math.IsNaN(ad) {
				a.c.Addf(report.ReportMismatch, report.Fail, x.Module, m.Fro, want, "‖s·B·A‖_F = %.6g, the report's delta_fro %.6g implies %.6g (tolerance %.2f%%)", m.Fro, *x.DeltaFro, want, 100*tol.FroRel)
			}
		}
	}
	var missing []string
	for _, m := range a.res.Matrices {
		if !seen[m.Module] {
			missing = append(missing, m.Module)
		}
	}
	for _, mod := range missing {
		a.c.Addf(report.ReportMismatch, report.Fail, mod, nil, nil, "the adapter has a pair the report does not list")
	}
}

// claimedFidelity checks the report's own fidelity figures against the
// claims and against each other.
func (a *auditor) claimedFidelity(x *extraction.Matrix, m *Matrix) {
	if x.ResidualFro != nil && x.NoiseFro != nil && x.ResidualToNoise != nil && *x.NoiseFro > 0 {
		ratio := *x.ResidualFro / *x.NoiseFro
		if math.Abs(ratio-*x.ResidualToNoise) > 1e-3*ratio {
			a.c.Addf(report.ReportMismatch, report.Fail, x.Module, *x.ResidualToNoise, ratio, "residual_to_noise %.6g is not residual_fro/noise_fro = %.6g", *x.ResidualToNoise, ratio)
		}
	}
	p := a.opt.Claims
	if p == nil {
		return
	}
	f := p.Fidelity
	if x.ResidualToNoise != nil && m.Large && f.ResidualToNoiseMax > 0 {
		v := *x.ResidualToNoise
		if v > f.ResidualToNoiseMax || v < f.ResidualToNoiseMin {
			a.c.Addf(report.ReportMismatch, report.Fail, x.Module, v, []float64{f.ResidualToNoiseMin, f.ResidualToNoiseMax}, "the report's residual_to_noise %.4g is outside the claimed %.3g–%.4g", v, f.ResidualToNoiseMin, f.ResidualToNoiseMax)
		}
	}
	if x.RebuiltRelError != nil && f.RebuiltRelErrorMax > 0 && *x.RebuiltRelError > f.RebuiltRelErrorMax {
		a.c.Addf(report.ReportMismatch, report.Fail, x.Module, *x.RebuiltRelError, f.RebuiltRelErrorMax, "the report's rebuilt_rel_error %.4g exceeds the claimed %.4g", *x.RebuiltRelError, f.RebuiltRelErrorMax)
	}
}
