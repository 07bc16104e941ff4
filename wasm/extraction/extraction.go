package extraction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// Format is the format string this package reads and writes.
const Format = "clef-extraction-report/1"

// MaxSize bounds the report file (186 matrices × 256 values is ~1 MB).
const MaxSize = 256 << 20

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
// real report is ~1.2 MB of numbers, 100–200 ms of decoding in a browser's
// wasm, which must not be one long task.
func ParseYield(data []byte, name string, yield func()) (*Report, error) {
	bad := func(format string, a ...any) error {
		return &report.Error{Code: report.ReportMismatch, Subject: name, Msg: fmt.Sprintf(format, a...)}
	}
	// The matrices are decoded one by one, the rest as usual.
	type head Report
	var h struct {
		head
		Matrices json.RawMessage `json:"matrices"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&h); err != nil {
		return nil, bad("not a readable extraction report: %v", err)
	}
	r := Report(h.head)
	if len(h.Matrices) > 0 && string(h.Matrices) != "null" {
		dec := json.NewDecoder(bytes.NewReader(h.Matrices))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, bad("not a readable extraction report: matrices is not an array")
		}
		r.Matrices = []Matrix{}
		for dec.More() {
			var m Matrix
			if err := dec.Decode(&m); err != nil {
				return nil, bad("not a readable extraction report: matrix %d: %v", len(r.Matrices), err)
			}
			r.Matrices = append(r.Matrices, m)
			if yield != nil {
				yield()
			}
		}
	}
	if r.Format != Format {
		return nil, bad("format is %q, want %q", r.Format, Format)
	}
	r.byModule = map[string]int{}
	for i, m := range r.Matrices {
		if m.Module == "" {
			return nil, bad("matrix %d has no module name", i)
		}
		if _, dup := r.byModule[m.Module]; dup {
			return nil, bad("module %s is listed twice", m.Module)
		}
		r.byModule[m.Module] = i
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
