// Package report holds the findings every check yields and the verdict they
// add up to (FORMATS §6). Codes are stable: tools and CI match on them.
package report

import (
	"errors"
	"fmt"
	"sort"
)

// Severity of a finding.
type Severity string

const (
	Fail Severity = "fail"
	Warn Severity = "warn"
	Info Severity = "info"
)

// Stable finding codes (FORMATS §6). New codes may be added; these keep their meaning.
const (
	FileUnreadable  = "file.unreadable"
	HeaderInvalid   = "header.invalid"
	DataLayout      = "data.layout"
	ConfigInvalid   = "config.invalid"
	ConfigMismatch  = "config.mismatch"
	PairMissing     = "pair.missing"
	PairUnexpected  = "pair.unexpected"
	ShapeMismatch   = "shape.mismatch"
	DtypeUnexpected = "dtype.unexpected"
	ValuesNonfinite = "values.nonfinite"
	ParamsMismatch  = "params.mismatch"
	RankDeficient   = "rank.deficient"
	FactorForm      = "factor.form"
	ReportMismatch  = "report.mismatch"
	RebuildError    = "rebuild.error"
	HiddenMismatch  = "hidden.mismatch"
	AnswerMismatch  = "answer.mismatch"
	// ExtraTensors is added by this project: tensors that are not LoRA pairs
	// (modules_to_save copies, embedding LoRA) are inventoried and reported.
	ExtraTensors = "tensors.extra"
)

// Finding is one observation of a check.
type Finding struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Subject  string   `json:"subject"`
	Message  string   `json:"message"`
	Measured any      `json:"measured,omitempty"`
	Expected any      `json:"expected,omitempty"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s: %s", f.Severity, f.Code, f.Subject, f.Message)
}

// Verdict of a list of findings: fail if any fails, else warn if any warns, else pass.
func Verdict(fs []Finding) string {
	v := "pass"
	for _, f := range fs {
		switch f.Severity {
		case Fail:
			return "fail"
		case Warn:
			v = "warn"
		}
	}
	return v
}

// Sort orders findings fail, warn, info, then by code and subject, keeping the
// order of equal ones.
func Sort(fs []Finding) {
	rank := map[Severity]int{Fail: 0, Warn: 1, Info: 2}
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.Code != b.Code {
			return a.Code < b.Code
		}
		return a.Subject < b.Subject
	})
}

// Finish sorts the findings and returns them (never nil: JSON shows [])
// with their verdict.
func (c *Collector) Finish() ([]Finding, string) {
	Sort(c.Findings)
	if c.Findings == nil {
		c.Findings = []Finding{}
	}
	return c.Findings, Verdict(c.Findings)
}

// Collector gathers findings. The zero value is ready to use.
type Collector struct {
	Findings []Finding
}

func (c *Collector) Add(f Finding) { c.Findings = append(c.Findings, f) }

func (c *Collector) Addf(code string, sev Severity, subject string, measured, expected any, format string, args ...any) {
	c.Add(Finding{Code: code, Severity: sev, Subject: subject, Message: fmt.Sprintf(format, args...), Measured: measured, Expected: expected})
}

// Has reports whether a finding with the code is present.
func (c *Collector) Has(code string) bool {
	for _, f := range c.Findings {
		if f.Code == code {
			return true
		}
	}
	return false
}

// Error is an error that carries a finding code, so that a failure deep in a
// reader surfaces as a finding with a stable code.
type Error struct {
	Code    string
	Subject string
	Msg     string
	Err     error // the sentinel, for errors.Is
}

func (e *Error) Error() string {
	if e.Subject != "" {
		return e.Subject + ": " + e.Msg
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Finding turns the error into a failing finding.
func (e *Error) Finding() Finding {
	return Finding{Code: e.Code, Severity: Fail, Subject: e.Subject, Message: e.Msg}
}

// Errors is a list of coded errors: a reader that finds several violations
// reports them all.
type Errors []*Error

func (es Errors) Error() string {
	if len(es) == 0 {
		return "no errors"
	}
	if len(es) == 1 {
		return es[0].Error()
	}
	return fmt.Sprintf("%s (and %d more)", es[0].Error(), len(es)-1)
}

// Unwrap lets errors.Is and errors.As see every error of the list.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// FindingsOf turns any error into failing findings: coded errors keep their
// code, anything else becomes file.unreadable about subject.
func FindingsOf(err error, subject string) []Finding {
	if err == nil {
		return nil
	}
	var es Errors
	if errors.As(err, &es) {
		out := make([]Finding, 0, len(es))
		for _, x := range es {
			out = append(out, x.Finding())
		}
		return out
	}
	var e *Error
	if errors.As(err, &e) {
		return []Finding{e.Finding()}
	}
	return []Finding{{Code: FileUnreadable, Severity: Fail, Subject: subject, Message: err.Error()}}
}
