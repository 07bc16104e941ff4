package jobs_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// viaJSON is o as the page reads it from the output's JSON alone.
func viaJSON(t *testing.T, o *jobs.Output) jobs.Output {
	t.Helper()
	b, err := report.JSON(o)
	if err != nil {
		t.Fatal(err)
	}
	var got jobs.Output
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestArrays: an output whose arrays went beside its JSON (TakeArrays,
// then PutArrays on the page) reads exactly as the output sent whole as
// JSON: the demo world's deep audits, and arrays with non-finite values,
// empty ones and none. Arrays that do not fit are refused.
func TestArrays(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	var outs []*jobs.Output
	for _, mode := range []report.Mode{report.ModeExact, report.ModeRandomized, report.ModeQuick} {
		res, err := audit.Run(context.Background(), source.Dir(filepath.Join(dir, "adapter")), ".", audit.Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, &jobs.Output{Audit: res})
	}
	if len(outs[0].Audit.Matrices) < 2 || len(outs[0].Audit.Matrices[0].Sigma) == 0 || len(outs[0].Audit.Matrices[0].ReportSigma) == 0 {
		t.Fatal("the demo's exact audit has no σ or report σ to send: the test proves nothing")
	}
	odd := &jobs.Output{Audit: &report.Audit{Matrices: []*report.AuditMatrix{
		{Module: "nan", Sigma: []float64{3, math.NaN(), 1, math.Inf(1)}, ReportSigma: []float64{math.Inf(-1)}},
		{Module: "empty", Sigma: []float64{}, ReportSigma: []float64{2.5e-300, 1.0000000000000002}},
		{Module: "none"},
	}}}
	nanSigma := odd.Audit.Matrices[0].Sigma
	outs = append(outs, odd, &jobs.Output{Note: "no audit"})
	for i, o := range outs {
		want := viaJSON(t, o)
		before := viaJSON(t, o)
		arrays := jobs.TakeArrays(o)
		got := viaJSON(t, o)
		if err := jobs.PutArrays(&got, arrays); err != nil {
			t.Fatalf("output %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("output %d read with its arrays beside the JSON differs from the output read whole", i)
		}
		if err := jobs.PutArrays(o, arrays); err != nil { // the sender's output, whole again
			t.Fatal(err)
		}
		if !reflect.DeepEqual(viaJSON(t, o), before) {
			t.Errorf("output %d: TakeArrays changed the sender's values", i)
		}
	}
	if !math.IsNaN(nanSigma[1]) {
		t.Error("TakeArrays wrote over the caller's NaN")
	}
	// Arrays that do not fit.
	o := outs[0]
	arrays := jobs.TakeArrays(o)
	for name, bad := range map[string][][]float64{"one short": arrays[:len(arrays)-1], "one more": append(arrays[:len(arrays):len(arrays)], nil), "none": nil} {
		got := viaJSON(t, o)
		if err := jobs.PutArrays(&got, bad); err == nil {
			t.Errorf("%s: put back", name)
		}
	}
	whole := viaJSON(t, o)
	if err := jobs.PutArrays(&whole, arrays); err != nil {
		t.Fatal(err)
	}
	if err := jobs.PutArrays(&whole, arrays); err == nil {
		t.Error("arrays put back twice")
	}
}
