package rebuild

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// TestHostileNonfiniteRebuild: a scaling that overflows float32 (lora_alpha
// 1e300) or NaN weights give figures JSON cannot hold; they become −1 and
// a values.nonfinite finding names them.
func TestHostileNonfiniteRebuild(t *testing.T) {
	m := &Matrix{Module: "m", Out: 2, In: 2, DeltaFro: 1, ResidualFro: math.Inf(1), NoiseFro: 1, ResidualToNoise: math.Inf(1), RebuiltRelError: math.NaN()}
	var c report.Collector
	finiteFigures(&c, m, 1e300)
	res := &Result{Matrices: []*Matrix{m}}
	res.Outcome = c.Outcome()
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if res.Verdict != report.VerdictFail || len(res.Findings) != 1 || res.Findings[0].Code != report.ValuesNonfinite {
		t.Errorf("%s %v", res.Verdict, res.Findings)
	}
	if m.ResidualFro != -1 || m.RebuiltRelError != -1 || m.DeltaFro != 1 {
		t.Errorf("%+v", m)
	}
}
