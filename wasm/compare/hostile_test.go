package compare

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

func has(o report.Outcome, code report.Code, msg string) bool {
	for _, f := range o.Findings {
		if f.Code == code && f.Severity == report.Fail && strings.Contains(f.Message, msg) {
			return true
		}
	}
	return false
}

func jsonOK(t *testing.T, v any) {
	t.Helper()
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("not JSON: %v", err)
	}
}

// TestHostileProbsNotDistribution: a candidate whose probabilities are
// all 1.0 (and that chose like the reference) once passed.
func TestHostileProbsNotDistribution(t *testing.T) {
	ref := map[string]*refs.Answer{"q": {ID: "q", Options: []string{"A", "B", "C", "D"}, Logits: []float64{2, 1, 0, 0}, Probs: []float64{0.6, 0.22, 0.09, 0.09}, Choice: "A"}}
	cand := map[string]*refs.Answer{"q": {ID: "q", Options: []string{"A", "B", "C", "D"}, Logits: []float64{2, 1, 0, 0}, Probs: []float64{1, 1, 1, 1}, Choice: "A"}}
	res := Answers(ref, cand, nil)
	if res.Verdict != report.VerdictFail || !has(res.Outcome, report.AnswerMismatch, "candidate's probabilities are not a distribution") {
		t.Errorf("%s %v", res.Verdict, res.Findings)
	}
	jsonOK(t, res)
	// The same, read from files: the reference side refuses it.
	fsys := fstest.MapFS{"a.jsonl": &fstest.MapFile{Data: []byte(`{"id":"q","options":["A","B"],"logits":[1,1],"probs":[1,1],"choice":"A"}` + "\n")}}
	if _, err := refs.ReadReferenceAnswers(fsys, "."); err == nil {
		t.Error("a reference that is not a distribution was read")
	}
}

// TestHostileNonfiniteFigures: logits of ±1.7e308 differ by more than a
// float64, a candidate's hidden states hold NaN and Inf: the figures stay
// JSON, and a finding says they were not finite.
func TestHostileNonfiniteFigures(t *testing.T) {
	ref := map[string]*refs.Answer{"q": {ID: "q", Options: []string{"A", "B"}, Logits: []float64{1.7e308, -1.7e308}, Probs: []float64{1, 0}, Choice: "A"}}
	cand := map[string]*refs.Answer{"q": {ID: "q", Options: []string{"A", "B"}, Logits: []float64{-1.7e308, 1.7e308}, Probs: []float64{0, 1}, Choice: "B"}}
	res := Answers(ref, cand, nil)
	jsonOK(t, res)
	if !has(res.Outcome, report.AnswerMismatch, "not finite") || res.Summary.MaxDLogit != math.MaxFloat64 {
		t.Errorf("%+v %v", res.Summary, res.Findings)
	}

	ids := []int64{1, 2}
	nan := func(l, i int) float32 {
		if i%3 == 0 {
			return float32(math.NaN())
		}
		return float32(math.Inf(1))
	}
	hres, err := Hidden(fstest.MapFS{"a.safetensors": hiddenFile(t, "a", ids, []int{3}, 2, val)}, ".",
		fstest.MapFS{"a.safetensors": hiddenFile(t, "a", ids, []int{3}, 2, nan)}, ".", HiddenTol{})
	if err != nil {
		t.Fatal(err)
	}
	jsonOK(t, hres)
	if hres.Verdict != report.VerdictFail || !has(hres.Outcome, report.HiddenMismatch, "NaN or infinite") {
		t.Errorf("%s %v", hres.Verdict, hres.Findings)
	}
	// A reference that holds them cannot judge.
	hres, _ = Hidden(fstest.MapFS{"a.safetensors": hiddenFile(t, "a", ids, []int{3}, 2, nan)}, ".",
		fstest.MapFS{"a.safetensors": hiddenFile(t, "a", ids, []int{3}, 2, val)}, ".", HiddenTol{})
	jsonOK(t, hres)
	if !has(hres.Outcome, report.HiddenMismatch, "reference's hidden states hold") {
		t.Errorf("%v", hres.Findings)
	}
	// States captured live whose shape and data disagree are not indexed.
	hc := NewHiddenComparer(HiddenTol{})
	good := &refs.Hidden{ID: "a", Layers: []int{3}, InputIDs: ids, Shape: []int{1, 2, 4}, Data: make([]float32, 8)}
	short := &refs.Hidden{ID: "a", Layers: []int{3}, InputIDs: ids, Shape: []int{1, 2, 4}, Data: make([]float32, 3)}
	hc.Record("a", good, nil, short, nil)
	if r := hc.Result(); r.Verdict != report.VerdictFail {
		t.Errorf("an inconsistent capture: %s", r.Verdict)
	}
}

// TestHostileHiddenLimits: a hidden-state file declaring states beyond
// refs.MaxHiddenBytes (a hole in a sparse file) is refused before anything
// is allocated for them.
func TestHostileHiddenLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 26 // F32 [1, 1, 2²⁶]: 256 MiB
	specs := []safetensors.Spec{{Name: "hidden_states", DType: "F32", Shape: []int64{1, 1, n}}, {Name: "input_ids", DType: "I64", Shape: []int64{1}}}
	if err := safetensors.WriteHeader(f, map[string]string{"format": refs.HiddenFormat, "id": "a", "layers": "0"}, specs); err != nil {
		t.Fatal(err)
	}
	off, _ := f.Seek(0, 1)
	f.Close()
	if err := os.Truncate(path, off+4*n+8); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = refs.ReadHidden(os.DirFS(dir), "a.safetensors")
	runtime.ReadMemStats(&after)
	var e *report.Error
	if !errors.As(err, &e) || e.Code != report.LimitExceeded || !strings.Contains(e.Msg, "MaxHiddenBytes") {
		t.Fatalf("%v, want the MaxHiddenBytes limit", err)
	}
	if a := after.TotalAlloc - before.TotalAlloc; a > 1<<20 {
		t.Errorf("allocated %d bytes before refusing", a)
	}
}
