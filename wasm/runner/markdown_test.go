package runner

import (
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/report"
)

func contains(t *testing.T, what, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("%s markdown lacks %q:\n%s", what, want, md)
		}
	}
}

func TestAuditMarkdown(t *testing.T) {
	dev, bound := 0.001, 0.0123
	r := &audit.Result{Outcome: report.Outcome{Verdict: "fail",
		Findings: []report.Finding{{Code: report.PairMissing, Severity: report.Fail, Subject: "model.layers.41.mlp.up_proj", Message: "has lora_A | but\nno lora_B"}}},
		Summary:  audit.Summary{Adapter: "demo", Pairs: 1, Mode: report.ModeExact, Kernel: "probes wasm-simd"},
		Matrices: []*audit.Matrix{{Module: "model.language_model.layers.40.mlp.gate_proj", Out: 192, In: 64, Rank: 16, NumRank: 16, Sigma: []float64{2, 1}, FormDev: &dev, Method: "probes", SigmaBound: &bound}}}
	contains(t, "audit", AuditMarkdown(r), "**Verdict: FAIL**", "| fail | `pair.missing` |", `has lora_A \| but no lora_B`, "- computed: probes wasm-simd",
		"| model.language_model.layers.40.mlp.gate_proj | 192 × 64 | 16 | 16 | 2 | 0.001 | – | probes ±1.2% |")
}

func TestHiddenAndDecisionsMarkdown(t *testing.T) {
	h := &compare.HiddenResult{Outcome: report.Outcome{Verdict: "fail"}, Summary: compare.HiddenSummary{Records: 2, Compared: 1, Failed: 2, Tol: compare.DefaultHidden,
		ByLayer: []compare.LayerStats{{Layer: 63, Cosine: 0.99, RelL2: 0.05}}},
		Records: []compare.RecordStats{{ID: "a/1", Status: "drift", Detail: "layers | beyond", Worst: &compare.LayerStats{Layer: 63, Cosine: 0.99, RelL2: 0.05}}, {ID: "a/2", Status: "missing"}}}
	contains(t, "hidden", HiddenMarkdown(h, "captured live"), "**Verdict: FAIL**", "captured live", "| 63 | 0.990000 | 0.05 |", `layers \| beyond`, "| a/2 | missing | – |")
	agree := 1
	d := &report.Decisions{Outcome: report.Outcome{Verdict: report.VerdictFail},
		Summary: report.DecisionsSummary{Server: "http://x", Records: 3, Answered: 2, Failed: 1, Agree: &agree},
		Records: []report.DecisionRow{{ID: "r1", Status: report.Answered, Choice: "A", Reference: "A", LatencyMS: 12}, {ID: "r2", Status: report.Answered, Choice: "B", Reference: "A", LatencyMS: 14}, {ID: "r3", Status: report.Failed, Error: "HTTP 500"}}}
	contains(t, "decisions", DecisionsMarkdown(d), "decisions from http://x", "**Verdict: FAIL**", "1 of 3 agree", "1 failed", "| r2 | B | A |", "HTTP 500")
}

func TestReconstructMarkdown(t *testing.T) {
	b := &rebuild.Block{Module: "m|x", Out: 8, In: 6, Row0: 2, Col0: 1, Rows: 2, Cols: 2, Scaling: 2, Values: []float64{1, -1, 0.5, 0}, Min: -1, Max: 1, Mean: 0.125, RMS: 0.75}
	r := &rebuild.Result{Outcome: report.Outcome{Verdict: "fail",
		Findings: []report.Finding{{Code: report.RebuildError, Severity: report.Fail, Subject: "m", Message: "residual 3.1 × noise"}}}, Compared: 10, Differing: []string{"a", "b"},
		Matrices: []*rebuild.Matrix{{Module: "m", Out: 8, In: 6, ResidualToNoise: 3.1, RebuiltRelError: 0.0123}}}
	contains(t, "block", BlockMarkdown(b), "## Block of s·B·A", `m\|x (8 × 6, s = 2): rows 2–3, columns 1–2`, "| -1 | 1 | 0.125 | 0.75 |")
	contains(t, "rebuild", RebuildMarkdown("local files", r), "## Rebuild check: FAIL", "Checkpoints: local files. 10 tensors compared, 2 differ; 1 modules rebuilt",
		"`"+string(report.RebuildError)+"`", "| m | 8 × 6 | 3.1000 | 1.23% |")
}
