package extraction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// Format is the format string this package reads and writes.
const Format = "clef-extraction-report/1"

// Limits on a report (a hostile one once listed a million matrices and
// took 1.6 GB to read). Exceeding one is a limit.exceeded error naming it.
const (
	// MaxSize bounds the report file (186 matrices × 256 values is ~1 MB;
	// a full model's 1,200 matrices at r = 4096 stay under it).
	MaxSize = 64 << 20
	// MaxMatrices bounds the matrices listed (an adapter's pairs are far
	// fewer; safetensors.MaxTensors bounds the tensors at 100,000).
	MaxMatrices = 50_000
	// MaxSingularValues bounds one matrix's singular_values (r values).
	MaxSingularValues = 1 << 16
)

// Report is the whole file.
type Report struct {
	Format           string     `json:"format"`
	Base             claims.Ref `json:"base"`
	Tuned            claims.Ref `json:"tuned"`
	Rank             int        `json:"rank,omitempty"`
	DType            string     `json:"dtype,omitempty"`
	TensorsCompared  *int       `json:"tensors_compared,omitempty"`
	TensorsDiffering *int       `json:"tensors_differing,omitempty"`
	Matrices         []Matrix   `json:"matrices"`
	byModule         map[string]int
}

// Matrix holds one module's figures; nil pointers are not reported.
type Matrix struct {
	Module          string    `json:"module"`
	Shape           []int     `json:"shape,omitempty"`
	DeltaFro        *float64  `json:"delta_fro,omitempty"`
	SingularValues  []float64 `json:"singular_values,omitempty"`
	ResidualFro     *float64  `json:"residual_fro,omitempty"`
	NoiseFro        *float64  `json:"noise_fro,omitempty"`
	ResidualToNoise *float64  `json:"residual_to_noise,omitempty"`
	RebuiltRelError *float64  `json:"rebuilt_rel_error,omitempty"`
}

// Parse reads a report. A wrong format string or malformed JSON is
// report.mismatch-coded (the report cannot be used); a module listed twice too.
func Parse(data []byte, name string) (*Report, error) { return ParseYield(data, name, nil) }

// Load reads and parses the report file name of fsys (at most MaxSize
// bytes).
func Load(fsys fs.FS, name string) (*Report, error) {
	data, err := source.ReadSmall(fsys, name, MaxSize)
	if err != nil {
		return nil, err
	}
	return Parse(data, name)
}

// ParseYield is Parse, calling yield (when not nil) after each matrix: the
// real report is ~1.2 MB of numbers, tens of milliseconds of decoding in a
// browser's wasm even read fast (fast.go), which must not be one long task.
func ParseYield(data []byte, name string, yield func()) (*Report, error) {
	bad, limit := errorsFor(name)
	if len(data) > MaxSize {
		return nil, limit("the report is %d bytes, more than %d (extraction.MaxSize)", len(data), MaxSize)
	}
	r, ok := decodeFast(data, yield)
	if !ok {
		var err error
		if r, err = decodeJSON(data, name, yield); err != nil {
			return nil, err
		}
	}
	if r.Format != Format {
		return nil, bad("format is %s, want %q", report.Clip(strconv.Quote(r.Format), 80), Format)
	}
	r.byModule = map[string]int{}
	for i, m := range r.Matrices {
		if m.Module == "" {
			return nil, bad("matrix %d has no module name", i)
		}
		if _, dup := r.byModule[m.Module]; dup {
			return nil, bad("module %s is listed twice", report.Clip(strconv.Quote(m.Module), 120))
		}
		r.byModule[m.Module] = i
	}
	return r, nil
}

// errorsFor makes the report's errors: bad (report.mismatch: it cannot be
// used) and limit (limit.exceeded), about the report name.
func errorsFor(name string) (bad, limit func(format string, a ...any) error) {
	of := func(code report.Code) func(string, ...any) error {
		return func(format string, a ...any) error {
			return &report.Error{Code: code, Subject: name, Msg: fmt.Sprintf(format, a...)}
		}
	}
	return of(report.ReportMismatch), of(report.LimitExceeded)
}

// decodeJSON is ParseYield's reading by encoding/json: of any report
// decodeFast does not read (fast.go), and the one that says what is wrong.
func decodeJSON(data []byte, name string, yield func()) (*Report, error) {
	bad, limit := errorsFor(name)
	// The top-level object is read key by key and the matrices one by one,
	// so that none is held twice and their count is checked as they come.
	dec := json.NewDecoder(bytes.NewReader(data))
	var r Report
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bad("not a readable extraction report: not a JSON object")
	}
	fields := map[string]any{"format": &r.Format, "base": &r.Base, "tuned": &r.Tuned, "rank": &r.Rank, "dtype": &r.DType,
		"tensors_compared": &r.TensorsCompared, "tensors_differing": &r.TensorsDiffering}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("not a readable extraction report: %v", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return nil, bad("not a readable extraction report: %s appears twice", report.Clip(strconv.Quote(key), 60))
		}
		seen[key] = true
		if key != "matrices" {
			dst, ok := fields[key]
			if !ok {
				dst = new(json.RawMessage) // unknown fields are ignored
			}
			if err := dec.Decode(dst); err != nil {
				return nil, bad("not a readable extraction report: %s: %v", report.Clip(key, 60), err)
			}
			continue
		}
		tok, err = dec.Token()
		if err != nil {
			return nil, bad("not a readable extraction report: %v", err)
		}
		if tok == nil {
			continue // "matrices": null
		}
		if tok != json.Delim('[') {
			return nil, bad("not a readable extraction report: matrices is not an array")
		}
		r.Matrices = []Matrix{}
		for dec.More() {
			if len(r.Matrices) == MaxMatrices {
				return nil, limit("the report lists more than %d matrices (extraction.MaxMatrices)", MaxMatrices)
			}
			var m Matrix
			if err := dec.Decode(&m); err != nil {
				return nil, bad("not a readable extraction report: matrix %d: %v", len(r.Matrices), err)
			}
			if len(m.SingularValues) > MaxSingularValues {
				return nil, limit("matrix %d lists %d singular values, more than %d (extraction.MaxSingularValues)", len(r.Matrices), len(m.SingularValues), MaxSingularValues)
			}
			r.Matrices = append(r.Matrices, m)
			if yield != nil {
				yield()
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, bad("not a readable extraction report: %v", err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, bad("not a readable extraction report: %v", err)
	}
	return &r, nil
}

// Find returns the figures of a module.
func (r *Report) Find(module string) (*Matrix, bool) {
	if r.byModule == nil {
		r.byModule = map[string]int{}
		for i, m := range r.Matrices {
			r.byModule[m.Module] = i
		}
	}
	i, ok := r.byModule[module]
	if !ok {
		return nil, false
	}
	return &r.Matrices[i], true
}

// F returns a pointer to v, for filling reports.
func F(v float64) *float64 { return &v }

// I returns a pointer to v.
func I(v int) *int { return &v }
