package compare

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

func hiddenFile(t *testing.T, id string, ids []int64, layers []int, T int, f func(l, i int) float32) *fstest.MapFile {
	H := 4
	h := &refs.Hidden{ID: id, Layers: layers, InputIDs: ids, Shape: []int{len(layers), T, H}}
	if T == 1 {
		h.Shape = []int{len(layers), H}
	}
	for l := range layers {
		for i := 0; i < T*H; i++ {
			h.Data = append(h.Data, f(l, i))
		}
	}
	var b bytes.Buffer
	if err := h.Encode(&b, "F32"); err != nil {
		t.Fatal(err)
	}
	return &fstest.MapFile{Data: b.Bytes()}
}

func val(l, i int) float32 { return float32(math.Sin(float64(l*31+i)) + 2) }

func TestHidden(t *testing.T) {
	ids := []int64{1, 72, 73, 2}
	ref := fstest.MapFS{
		"a__1.safetensors": hiddenFile(t, "a/1", ids, []int{40, 41}, 4, val),
		"a__2.safetensors": hiddenFile(t, "a/2", ids, []int{40, 41}, 4, val),
		"a__3.safetensors": hiddenFile(t, "a/3", ids, []int{40, 41}, 4, val),
		"a__4.safetensors": hiddenFile(t, "a/4", ids, []int{40, 41}, 4, val),
		"a__5.safetensors": hiddenFile(t, "a/5", ids, []int{40, 41}, 4, val),
		"a__6.safetensors": hiddenFile(t, "a/6", ids, []int{40, 41}, 4, val),
	}
	cand := fstest.MapFS{
		// bf16-level noise: passes.
		"a__1.safetensors": hiddenFile(t, "a/1", ids, []int{40, 41}, 4, func(l, i int) float32 { return val(l, i) * (1 + 0.003*float32(i%3-1)) }),
		// drift in layer 41 only.
		"a__2.safetensors": hiddenFile(t, "a/2", ids, []int{40, 41}, 4, func(l, i int) float32 {
			if l == 1 {
				return val(l, i) * (1 + 0.2*float32(i%2))
			}
			return val(l, i)
		}),
		// token ids differ: no numbers compared.
		"a__3.safetensors": hiddenFile(t, "a/3", []int64{1, 72, 74, 2}, []int{40, 41}, 4, val),
		// a layer missing.
		"a__4.safetensors": hiddenFile(t, "a/4", ids, []int{40}, 4, val),
		// last token only: compared on the last position.
		"a__5.safetensors": hiddenFile(t, "a/5", ids, []int{40, 41}, 1, func(l, i int) float32 { return val(l, 3*4+i) }),
		// a/6 missing; an extra record.
		"b__1.safetensors": hiddenFile(t, "b/1", ids, []int{40, 41}, 4, val),
	}
	res, err := Hidden(ref, ".", cand, ".", HiddenTol{})
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, r := range res.Records {
		status[r.ID] = r.Status
	}
	want := map[string]string{"a/1": "ok", "a/2": "drift", "a/3": "tokens", "a/4": "shape", "a/5": "ok", "a/6": "missing"}
	for id, s := range want {
		if status[id] != s {
			t.Errorf("%s: %s, want %s", id, status[id], s)
		}
	}
	if res.Verdict != "fail" || res.Summary.Failed != 4 || res.Summary.Extra != 1 || res.Summary.Compared != 3 {
		t.Errorf("summary %+v", res.Summary)
	}
	// Worst first: the drifting record leads the compared ones.
	for _, r := range res.Records {
		if r.Status == "ok" || r.Status == "drift" {
			if r.ID != "a/2" {
				t.Errorf("worst compared record is %s", r.ID)
			}
			break
		}
	}
	var drift report.Finding
	for _, f := range res.Findings {
		if f.Subject == "a/2" {
			drift = f
		}
	}
	if drift.Code != report.HiddenMismatch || !strings.Contains(drift.Message, "41 (cos") || strings.Contains(drift.Message, "40 (cos") {
		t.Errorf("drift finding %+v", drift)
	}
}

func TestStatsIndependent(t *testing.T) {
	a := []float32{1, 2, 3}
	b := []float32{1, 2, 4}
	s := Stats(a, b)
	// cos = (1+4+12)/(√14·√21), NMSE = 1/14.
	if math.Abs(s.Cosine-17/math.Sqrt(14*21)) > 1e-12 || math.Abs(s.NMSE-1.0/14) > 1e-12 || s.MaxAbs != 1 || math.Abs(s.RelL2-math.Sqrt(1.0/14)) > 1e-12 {
		t.Errorf("%+v", s)
	}
}

func TestAnswers(t *testing.T) {
	mk := func(id, choice string, logits ...float64) *refs.Answer {
		opts := []string{"A", "B", "C"}
		var z float64
		for _, l := range logits {
			z += math.Exp(l)
		}
		var p []float64
		for _, l := range logits {
			p = append(p, math.Exp(l)/z)
		}
		return &refs.Answer{ID: id, Options: opts, Logits: logits, Probs: p, Choice: choice}
	}
	ref := map[string]*refs.Answer{"1": mk("1", "A", 2, 0, 0), "2": mk("2", "B", 0, 2, 0), "3": mk("3", "C", 0, 0, 2), "4": mk("4", "A", 1, 0, 0)}
	cand := map[string]*refs.Answer{"1": mk("1", "A", 2.1, 0, 0), "2": mk("2", "A", 1, 0.5, 0), "3": mk("3", "C", 0, 0, 2)}
	cand["3"].Options = []string{"A", "C", "B"}
	res := Answers(ref, cand, map[string]string{"1": "A", "2": "B", "4": "B"})
	s := res.Summary
	if s.Records != 4 || s.Answered != 2 || s.Agree != 1 || s.Known != 3 || s.RefCorrect != 2 || s.CandCorrect != 1 || math.Abs(s.MaxDLogit-1.5) > 1e-12 {
		t.Errorf("summary %+v", s)
	}
	n := map[string]int{}
	for _, f := range res.Findings {
		if f.Code != report.AnswerMismatch {
			t.Errorf("code %s", f.Code)
		}
		n[f.Subject]++
	}
	if n["2"] != 1 || n["3"] != 1 || n["4"] != 1 || n["1"] != 0 || res.Verdict != "fail" {
		t.Errorf("findings %v", res.Findings)
	}
	if k := kl([]float64{0.5, 0.5}, []float64{0.25, 0.75}); math.Abs(k-(0.5*math.Log(2)+0.5*math.Log(2.0/3))) > 1e-12 {
		t.Errorf("kl %v", k)
	}
}
