package extraction

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
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

// TestHostileHugeReportParse: a million matrices stop at MaxMatrices.
func TestHostileHugeReportParse(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"format":"` + Format + `","matrices":[`)
	for i := 0; i < MaxMatrices+10; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"module":"m.%d"}`, i)
	}
	b.WriteString(`]}`)
	_, err := Parse([]byte(b.String()), "r")
	var e *report.Error
	if !errors.As(err, &e) || e.Code != report.LimitExceeded {
		t.Fatalf("%v, want limit.exceeded", err)
	}
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"", "{}", `{"format":"` + Format + `","matrices":null}`, `{"matrices":[{}]}`, `{"matrices":{}}`, `[]`, `{"format":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := Parse(data, "fuzz")
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > uint64(len(data))*64+1<<20 {
			t.Fatalf("allocated %d bytes for %d", n, len(data))
		}
		if err != nil {
			var e *report.Error
			if !errors.As(err, &e) {
				t.Fatalf("error without a code: %v", err)
			}
			return
		}
		if r.Format != Format || len(r.Matrices) > MaxMatrices {
			t.Fatalf("accepted %q with %d matrices", r.Format, len(r.Matrices))
		}
		for _, m := range r.Matrices {
			if _, ok := r.Find(m.Module); !ok || m.Module == "" {
				t.Fatalf("module %q not found", m.Module)
			}
		}
	})
}
