package report

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Severity of a finding.
type Severity string

const (
	Fail Severity = "fail"
	Warn Severity = "warn"
	Info Severity = "info"
	// Unchecked (severity "error"): this part of the check could not be
	// done (an input missing or unreachable, a refused request, a timeout,
	// a cancellation, nothing to compare). It says nothing about the
	// artifact.
	Unchecked Severity = "error"
)

// Code is a stable finding code (FORMATS §6, extended in wasm/FORMATS.md):
// tools and CI match on it. New codes may be added; these keep their meaning.
type Code string

// The finding codes.
const (
	FileUnreadable  Code = "file.unreadable"
	HeaderInvalid   Code = "header.invalid"
	DataLayout      Code = "data.layout"
	ConfigInvalid   Code = "config.invalid"
	ConfigMismatch  Code = "config.mismatch"
	PairMissing     Code = "pair.missing"
	PairUnexpected  Code = "pair.unexpected"
	ShapeMismatch   Code = "shape.mismatch"
	DtypeUnexpected Code = "dtype.unexpected"
	ValuesNonfinite Code = "values.nonfinite"
	ParamsMismatch  Code = "params.mismatch"
	RankDeficient   Code = "rank.deficient"
	FactorForm      Code = "factor.form"
	ReportMismatch  Code = "report.mismatch"
	RebuildError    Code = "rebuild.error"
	HiddenMismatch  Code = "hidden.mismatch"
	AnswerMismatch  Code = "answer.mismatch"
	// ExtraTensors is added by this project: tensors that are not LoRA pairs
	// (modules_to_save copies, embedding LoRA) are inventoried and reported.
	ExtraTensors Code = "tensors.extra"
	// ConfigUnknown: adapter_config.json has fields this tool does not know
	// (kept and shown, never an error: info).
	ConfigUnknown Code = "config.unknown"
	// DecisionFailed: a decision request failed (the server answered an
	// error, or the answer was malformed).
	DecisionFailed Code = "decision.failed"
)

// Finding is one observation of a check.
type Finding struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	Subject  string   `json:"subject"`
	Message  string   `json:"message"`
	Measured any      `json:"measured,omitempty"`
	Expected any      `json:"expected,omitempty"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s %s: %s", f.Severity, f.Code, f.Subject, f.Message)
}

// Verdict is what a check concludes: about the artifact (pass, warn, fail),
// or that the check could not be completed (error: an input missing or
// unreachable, a refused request, a cancellation, nothing to check), which
// says nothing about the artifact.
type Verdict string

// The verdicts.
const (
	VerdictPass  Verdict = "pass"
	VerdictWarn  Verdict = "warn"
	VerdictFail  Verdict = "fail"
	VerdictError Verdict = "error"
)

// Failed reports whether the verdict is fail (exit status 1).
func (v Verdict) Failed() bool { return v == VerdictFail }

// Exit is the verdict's exit status: 0 pass or warn, 1 fail, 2 error.
func (v Verdict) Exit() int {
	switch v {
	case VerdictFail:
		return 1
	case VerdictError:
		return 2
	}
	return 0
}

// VerdictOf a list of findings: fail if any fails (what was measured is
// wrong, even if the rest could not be checked); else error if part of the
// check could not be done; else warn if any warns; else pass.
func VerdictOf(fs []Finding) Verdict {
	v := VerdictPass
	for _, f := range fs {
		switch f.Severity {
		case Fail:
			return VerdictFail
		case Unchecked:
			v = VerdictError
		case Warn:
			if v == VerdictPass {
				v = VerdictWarn
			}
		}
	}
	return v
}

// Outcome is what every check's result carries: its verdict and the
// findings it adds up from. Result types embed it, so their JSON has
// "verdict" and "findings" at the top.
type Outcome struct {
	Verdict  Verdict   `json:"verdict"`
	Findings []Finding `json:"findings"`
}

// Add appends findings and recomputes the verdict, keeping the findings
// sorted.
func (o *Outcome) Add(fs ...Finding) {
	o.Findings = append(o.Findings, fs...)
	Sort(o.Findings)
	o.Verdict = VerdictOf(o.Findings)
}

// Mode is how deep an audit goes.
type Mode string

// The audit modes: one spelling in flags, specs, summaries and pages.
const (
	// ModeQuick: inventory, dtypes, NaN/Inf scan and norms; no spectra.
	ModeQuick Mode = "quick"
	// ModeRandomized: the SVD form checked with Gaussian probes, exact
	// Grams only where the probes cannot decide.
	ModeRandomized Mode = "randomized"
	// ModeExact: every pair's r × r Gram matrices and their spectra.
	ModeExact Mode = "exact"
)

// Modes lists the audit modes, the default (randomized) first.
var Modes = []Mode{ModeRandomized, ModeQuick, ModeExact}

// ParseMode reads a mode's name; "" is the default, randomized.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeRandomized, nil
	case ModeQuick, ModeRandomized, ModeExact:
		return m, nil
	}
	return "", fmt.Errorf("unknown audit mode %q (quick, randomized or exact)", Clip(s, 40))
}

// Sort orders findings fail, warn, info, then by code and subject, keeping the
// order of equal ones.
func Sort(fs []Finding) {
	rank := map[Severity]int{Fail: 0, Unchecked: 1, Warn: 2, Info: 3}
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
func (c *Collector) Finish() ([]Finding, Verdict) {
	Sort(c.Findings)
	if c.Findings == nil {
		c.Findings = []Finding{}
	}
	return c.Findings, VerdictOf(c.Findings)
}

// Outcome is Finish as an Outcome.
func (c *Collector) Outcome() Outcome {
	fs, v := c.Finish()
	return Outcome{Verdict: v, Findings: fs}
}

// Collector gathers findings. The zero value is ready to use.
type Collector struct {
	Findings []Finding
}

func (c *Collector) Add(f Finding) { c.Findings = append(c.Findings, f) }

func (c *Collector) Addf(code Code, sev Severity, subject string, measured, expected any, format string, args ...any) {
	c.Add(Finding{Code: code, Severity: sev, Subject: subject, Message: fmt.Sprintf(format, args...), Measured: measured, Expected: expected})
}

// Has reports whether a finding with the code is present.
func (c *Collector) Has(code Code) bool {
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
	Code    Code
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

// Label is the verdict as a badge shows it: PASS, WARN, FAIL or ERROR.
func (v Verdict) Label() string { return strings.ToUpper(string(v)) }
