package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestJSONNonFinite: a result holding NaN and ±Inf still encodes, with
// null where the figure is, and everything else as encoding/json writes it.
func TestJSONNonFinite(t *testing.T) {
	h := &Hidden{Outcome: Outcome{Verdict: VerdictFail, Findings: []Finding{{Code: HiddenMismatch, Severity: Fail, Subject: "a/1", Message: "x", Measured: math.Inf(1)}}},
		Summary: HiddenSummary{Records: 1, MinCosine: math.NaN(), MaxRelL2: math.Inf(-1), Tol: DefaultHidden},
		Records: []RecordStats{{ID: "a/1", Status: "drift", Layers: []LayerStats{{Layer: 3, Cosine: math.NaN(), RelL2: 0.5}}}}}
	if _, err := json.Marshal(h); err == nil {
		t.Fatal("encoding/json accepted NaN: the test proves nothing")
	}
	data, err := JSON(h)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, data)
	}
	s := back["summary"].(map[string]any)
	if back["verdict"] != "fail" || s["min_cosine"] != nil || s["max_rel_l2"] != nil || s["records"] != 1.0 || s["tolerances"].(map[string]any)["max_rel_l2"] != 0.016 {
		t.Fatalf("summary %v (%s)", s, data)
	}
	l := back["records"].([]any)[0].(map[string]any)["layers"].([]any)[0].(map[string]any)
	if l["cosine"] != nil || l["rel_l2"] != 0.5 || l["layer"] != 3.0 {
		t.Fatalf("layer %v", l)
	}
	if f := back["findings"].([]any)[0].(map[string]any); f["measured"] != nil || f["code"] != "hidden.mismatch" {
		t.Fatalf("finding %v", f)
	}
	if strings.Contains(string(data), "detail") || strings.Contains(string(data), "worst") {
		t.Errorf("omitempty fields were written: %s", data)
	}
	// A finite value is encoded exactly as encoding/json does.
	h.Summary.MinCosine, h.Summary.MaxRelL2, h.Records[0].Layers[0].Cosine, h.Findings[0].Measured = 0.9, 0.1, 0.9, 2.0
	a, _ := json.Marshal(h)
	b, err := JSON(h)
	if err != nil || string(a) != string(b) {
		t.Fatalf("finite: %v\n%s\n%s", err, a, b)
	}
}
