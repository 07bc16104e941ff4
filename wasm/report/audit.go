package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/progress"
)

// AuditMatrix holds one pair's figures (package audit calls it Matrix).
type AuditMatrix struct {
	Module    string    `json:"module"`
	Layer     int       `json:"layer"`
	Short     string    `json:"short"`
	Out       int       `json:"out"`
	In        int       `json:"in"`
	Rank      int       `json:"r"`
	Scaling   float64   `json:"scaling"`
	DTypeA    string    `json:"dtype_a"`
	DTypeB    string    `json:"dtype_b"`
	Large     bool      `json:"large"`
	Params    int64     `json:"params"`
	NormA     float64   `json:"norm_a"`
	NormB     float64   `json:"norm_b"`
	Nonfinite int       `json:"nonfinite"`
	Fro       float64   `json:"fro,omitempty"`       // ‖s·B·A‖_F, deep only
	Sigma     []float64 `json:"sigma,omitempty"`     // singular values of s·B·A, deep only
	NumRank   int       `json:"num_rank,omitempty"`  // numerical rank, deep only
	FormDev   *float64  `json:"form_dev,omitempty"`  // SVD-form deviation, deep only
	ReportSV  *float64  `json:"report_sv,omitempty"` // largest |σ − σ_report| / tolerance
	ReportFro *float64  `json:"report_fro,omitempty"`
	// Method is how the spectrum was obtained: "gram" (exact) or "probes"
	// (randomized, with SigmaBound the relative bound on every σ).
	Method     string   `json:"method,omitempty"`
	SigmaBound *float64 `json:"sigma_bound,omitempty"`
	Skipped    string   `json:"skipped,omitempty"` // why values were not checked
	// What the charts draw beside the figures: the extraction report's
	// singular values and residual/noise for this module (when a report
	// lists it), and the numerical-rank cut (σ below it count as zero).
	ReportSigma []float64 `json:"report_sigma,omitempty"`
	ReportR2N   *float64  `json:"report_residual_to_noise,omitempty"`
	RankTol     float64   `json:"rank_tol,omitempty"`
}

// AuditTol are the tolerances an audit applied (audit.Tolerances), and
// the claims' residual/noise band when a claims profile states one.
type AuditTol struct {
	SigmaRel        float64     `json:"sigma_rel"` // σ against the report: |σ − σ_report| ≤ SigmaRel·σ_report + SigmaAbs·σ₁,report
	SigmaAbs        float64     `json:"sigma_abs"`
	FroRel          float64     `json:"fro_rel"`
	Form            float64     `json:"form"` // SVD-form deviation
	ResidualToNoise *[2]float64 `json:"residual_to_noise,omitempty"`
}

// AuditSummary is the inventory of the adapter (audit.Summary).
type AuditSummary struct {
	Adapter      string         `json:"adapter"`
	Files        []string       `json:"files"`
	Sharded      bool           `json:"sharded"`
	Tensors      int            `json:"tensors"`
	Pairs        int            `json:"pairs"`
	Parameters   int64          `json:"parameters"`
	Bytes        int64          `json:"bytes"`
	Rank         int            `json:"r"`
	Alpha        float64        `json:"lora_alpha"`
	RSLoRA       bool           `json:"use_rslora"`
	Scaling      float64        `json:"scaling"`
	DTypes       map[string]int `json:"dtypes"`
	Layers       []int          `json:"layers"`
	Modules      []string       `json:"modules"`
	Large        int            `json:"large"`
	Small        int            `json:"small"`
	Extra        int            `json:"extra_tensors"`
	Claims       string         `json:"claims,omitempty"`
	Report       string         `json:"report,omitempty"`
	Mode         Mode           `json:"mode"`
	Kernel       string         `json:"kernel,omitempty"`
	Seconds      float64        `json:"seconds"`
	Unknown      []string       `json:"unknown_config_fields,omitempty"`
	Expectations string         `json:"expected_from"`
	// Tol are the tolerances applied (absent when nothing was audited).
	Tol *AuditTol `json:"tolerances,omitempty"`
}

// Audit is an audit's outcome, in the CLI's --json schema (audit.Result).
type Audit struct {
	Outcome
	Summary  AuditSummary   `json:"summary"`
	Matrices []*AuditMatrix `json:"matrices"`
	// Rebuild is the rebuild check against the base and tuned checkpoints,
	// when they were given (its findings are among the audit's).
	Rebuild *Rebuild `json:"rebuild,omitempty"`
	// Provenance says what was audited, with what and when.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Fin is x, or −1 when x is not finite: reports put −1 for NaN and ±Inf,
// which JSON cannot hold (the figures it replaces are never negative).
func Fin(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return -1
	}
	return x
}

// MarshalJSON keeps non-finite floats out of the JSON (they are not JSON).
func (m *AuditMatrix) MarshalJSON() ([]byte, error) {
	type plain AuditMatrix
	c := *m
	c.NormA, c.NormB, c.Fro = Fin(c.NormA), Fin(c.NormB), Fin(c.Fro)
	for _, p := range []**float64{&c.FormDev, &c.ReportSV, &c.ReportFro} {
		if *p != nil {
			v := Fin(**p)
			*p = &v
		}
	}
	return json.Marshal((*plain)(&c))
}

// Lines are an audit's summary as the page shows it: its figures, and
// where its expectations came from — with no empty field, and no time for
// an audit still running. The engine writes them (the page shows them).
func (s *AuditSummary) Lines(running bool) []string {
	figures := fmt.Sprintf("%s — %s (%d large, %d small), %s parameters, %s, r = %d, scaling %g",
		Clip(s.Adapter, 80), Plural(s.Pairs, "pair"), s.Large, s.Small, Count(s.Parameters), progress.Bytes(s.Bytes), s.Rank, s.Scaling)
	if running {
		figures += fmt.Sprintf(", %s audit running", s.Mode)
	} else {
		figures += fmt.Sprintf(", %s audit in %.2f s", s.Mode, s.Seconds)
	}
	var from []string
	if s.Expectations != "" {
		from = append(from, "expected pairs from "+s.Expectations)
	}
	if s.Report != "" {
		from = append(from, "report: "+s.Report)
	} else {
		from = append(from, "no extraction report")
	}
	if s.Claims != "" {
		from = append(from, "claims: "+s.Claims)
	} else {
		from = append(from, "no claims profile")
	}
	return []string{figures, strings.Join(from, "; ")}
}
