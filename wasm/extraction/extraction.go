// Package extraction reads and writes extraction-report.json (format
// "clef-extraction-report/1", FORMATS §4): per-matrix figures from the SVD
// extraction of an adapter. Missing fields mean "not reported", never an error.
package extraction

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/report"
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
func Parse(data []byte, name string) (*Report, error) {
	bad := func(format string, a ...any) error {
		return &report.Error{Code: report.ReportMismatch, Subject: name, Msg: fmt.Sprintf(format, a...)}
	}
	var r Report
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, bad("not a readable extraction report: %v", err)
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
