package extraction

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
)

func TestParseYield(t *testing.T) {
	want := Report{Format: Format, Rank: 16, DType: "bf16", TensorsCompared: I(9), Matrices: []Matrix{
		{Module: "a", Shape: []int{4, 3}, DeltaFro: F(1.5), SingularValues: []float64{1, 0.5, 0.25}},
		{Module: "b", ResidualToNoise: F(0.8)},
	}}
	data, _ := json.Marshal(want)
	yields := 0
	got, err := ParseYield(data, "r.json", func() { yields++ })
	if err != nil {
		t.Fatal(err)
	}
	got.byModule = nil
	if !reflect.DeepEqual(*got, want) || yields != 2 {
		t.Errorf("got %+v (%d yields), want %+v", got, yields, want)
	}
	if m, ok := got.Find("b"); !ok || *m.ResidualToNoise != 0.8 {
		t.Errorf("Find: %v %v", m, ok)
	}
	if r, err := Parse([]byte(`{"format": "`+Format+`"}`), "r"); err != nil || r.Matrices != nil {
		t.Errorf("no matrices: %v %v", r, err)
	}
	for _, bad := range []string{
		`{"format": "other/1", "matrices": []}`,
		`{"format": "` + Format + `", "matrices": {}}`,
		`{"format": "` + Format + `", "matrices": [{"module": "a", "shape": "x"}]}`,
		`{"format": "` + Format + `", "matrices": [{"module": "a"}, {"module": "a"}]}`,
		`{"format": "` + Format + `", "matrices": [{"shape": [1, 2]}]}`,
		`{"format": `,
	} {
		_, err := Parse([]byte(bad), "r.json")
		var e *report.Error
		if !errors.As(err, &e) || e.Code != report.ReportMismatch {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
