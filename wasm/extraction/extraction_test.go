package extraction

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/claims"
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

// twinReport is a report the size of the card's: 186 matrices of 256
// singular values, with every optional figure, as json.Marshal writes them
// (exponents included: 1e-05, 2.5e+20).
func twinReport(tb testing.TB) []byte {
	tb.Helper()
	rng := rand.New(rand.NewPCG(7, 13))
	r := Report{Format: Format, Base: claimsRef("Qwen/Qwen3.8-27B", "1d4bf0f2"), Tuned: claimsRef("Cloudflare/clef", "2f3de3dd"), Rank: 256, DType: "BF16", TensorsCompared: I(1184), TensorsDiffering: I(186)}
	for i := range 186 {
		m := Matrix{Module: fmt.Sprintf("model.language_model.layers.%d.mlp.gate_proj", 40+i/8), Shape: []int{17408, 5120},
			DeltaFro: F(rng.Float64() * 30), ResidualFro: F(rng.Float64() * 1e-3), NoiseFro: F(rng.Float64()), ResidualToNoise: F(rng.Float64()), RebuiltRelError: F(rng.ExpFloat64() * 1e-6)}
		m.Module += strconv.Itoa(i)
		for j := range 256 {
			v := rng.Float64() * 2 / float64(j+1)
			if j%37 == 0 {
				v *= 1e-9 // written with an exponent
			}
			m.SingularValues = append(m.SingularValues, v)
		}
		r.Matrices = append(r.Matrices, m)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func claimsRef(repo, rev string) claims.Ref { return claims.Ref{Repo: repo, Revision: rev} }

// sameAsJSON fails t when decodeFast reads data and encoding/json does not
// read the very same report (figures, nils and empty slices alike); it says
// whether decodeFast read it.
func sameAsJSON(t *testing.T, data []byte) bool {
	t.Helper()
	fast, ok := decodeFast(data, nil)
	if !ok {
		return false
	}
	slow, err := decodeJSON(data, "r", nil)
	if err != nil {
		t.Fatalf("decodeFast read %q, which encoding/json refuses: %v", clipped(data), err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%q: decodeFast read\n%+v\nencoding/json\n%+v", clipped(data), *fast, *slow)
	}
	return true
}

func clipped(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// TestDecodeFast: the common forms of a report are read fast, each exactly
// as encoding/json reads it; whatever encoding/json might read otherwise
// (case-folded keys, escapes, repeated keys, nulls in a list of numbers)
// or refuses goes to encoding/json, whose reading Parse then returns.
func TestDecodeFast(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join("testdata", "demo-report.json"))
	if err != nil {
		t.Fatal(err)
	}
	f := `"format":"` + Format + `"`
	for _, s := range []string{
		string(demo), string(twinReport(t)), `{}`, " {\n\t} \r\n", `{` + f + `}`, `{` + f + `,"matrices":null}`, `{` + f + `,"matrices":[]}`,
		`{` + f + `,"matrices":[{}]}`, `{` + f + `,"matrices":[null]}`,
		`{"future":{"a":[1,{"b":"c\"]}"}]},` + f + `,"rank":3,"x":-0.5e+2,"y":"\u00e9","z":[true,false,null]}`,
		`{` + f + `,"matrices":[{"module":"a","singular_values":[],"shape":null,"delta_fro":null,"note":"x\\y"}]}`,
		`{` + f + `,"matrices":[{"module":"é.ü","singular_values":[0,-0,1E3,1e-400,2.5E+10,0.000001],"shape":[1,2]}]}`,
		`{` + f + `,"matrices":[{"module":"a","singular_values":null,"residual_to_noise":1}, {"module":"b"}]}`,
		`{"base":{"REPO":"x","revision":"y"},"tuned":null,"tensors_compared":null,` + f + `}`,
	} {
		if !sameAsJSON(t, []byte(s)) {
			t.Errorf("%q: not read fast", clipped([]byte(s)))
		}
	}
	for _, s := range []string{
		``, `[]`, `{"format":}`, `{` + f + `,}`, `{` + f + `} x`, `{` + f + `,"format":"x"}`, `{"form\u0061t":"x"}`,
		`{` + f + `,"matrices":[{"Module":"a"}]}`, `{` + f + `,"matrices":[{"module":"a","module":"b"}]}`,
		`{` + f + `,"matrices":[{"module":"a\u0062"}]}`, `{` + f + `,"matrices":[{"module":"a","singular_values":[1,null]}]}`,
		`{` + f + `,"matrices":[{"module":"a","singular_values":[1e400]}]}`, `{` + f + `,"matrices":[{"module":"a","singular_values":[01]}]}`,
		`{` + f + `,"matrices":[{"module":"a","singular_values":[+1]}]}`, `{` + f + `,"matrices":[{"module":"a","singular_values":[.5]}]}`,
		`{` + f + `,"matrices":[{"module":"a","singular_values":[Infinity]}]}`, `{` + f + `,"matrices":[{"module":"a","delta_fro":"1"}]}`,
		`{` + f + `,"matrices":[{"module":"a","ſhape":[1]}]}`, `{` + f + `,"matrices":[{"module":"a","x":[1}]}`,
		`{` + f + `,"matrices":[1]}`, `{` + f + `,"matrices":{}}`, "{" + f + `,"matrices":[{"module":"a` + "\xff" + `"}]}`,
		`{` + f + `,"matrices":[{"module":"a","singular_values":[1,]}]}`, `{` + f + `,"rank":"3"}`, "{}\x00",
		// Nested past encoding/json's 10,000 levels counted from the
		// report (not from the value), and far less deep.
		`{` + f + `,"matrices":[{"module":"a","x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}]}`,
		`{` + f + `,"future":` + strings.Repeat(`{"a":`, 600) + `1` + strings.Repeat("}", 600) + `}`,
	} {
		if sameAsJSON(t, []byte(s)) {
			t.Errorf("%q: read fast, want encoding/json's reading", clipped([]byte(s)))
		}
	}
	// The limits stop the fast reading too (Parse then names them).
	big := `{` + f + `,"matrices":[{"module":"a","singular_values":[` + strings.Repeat("1,", MaxSingularValues) + `1]}]}`
	if sameAsJSON(t, []byte(big)) {
		t.Error("more than MaxSingularValues read fast")
	}
	var e *report.Error
	if _, err := Parse([]byte(big), "r"); !errors.As(err, &e) || e.Code != report.LimitExceeded {
		t.Errorf("more than MaxSingularValues: %v", err)
	}
}

// FuzzParseFast: whatever decodeFast reads, encoding/json reads the same.
func FuzzParseFast(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"format":"` + Format + `","matrices":[{"module":"a","shape":[2,3],"singular_values":[1.5,2e-3],"delta_fro":null,"x":{"y":["z"]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { sameAsJSON(t, data) })
}

// BenchmarkParse reads a report the size of the card's, fast and by
// encoding/json (make bench runs it natively and in wasm under node).
func BenchmarkParse(b *testing.B) {
	data := twinReport(b)
	b.Run("fast", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, ok := decodeFast(data, nil); !ok {
				b.Fatal("not read fast")
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := decodeJSON(data, "r", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
