// Package findings turns the engine's errors into findings with stable
// codes (FORMATS §6), in one place: the readers return their own sentinel
// errors and know nothing of codes; the audit and the rebuild check, which
// both read checkpoints, call Of.
//
// The mapping:
//
//	safetensors.ErrHeader     header.invalid
//	safetensors.ErrLayout     data.layout
//	safetensors.ErrLimit      limit.exceeded
//	safetensors.ErrTruncated  file.unreadable
//	safetensors.ErrNoTensor   file.unreadable
//	any other *safetensors.Error (a shard that cannot be opened, …)
//	                          file.unreadable
//	an input unreachable, refused, changed, a cancelled or timed-out
//	read (CouldNot)           report.ErrorOf: input.unreachable,
//	                          input.refused, input.changed,
//	                          check.cancelled (severity
//	                          error: the check could not be done)
//	anything else             report.FindingsOf: a *report.Error keeps its
//	                          code (source's file.unreadable, peft's
//	                          config.invalid, extraction's report.mismatch),
//	                          the rest is file.unreadable about subject
//
// A safetensors.Errors list gives one finding per violation, so that every
// problem of a file is reported, not just the first. Findings keep the
// subject and message of the error they come from, and fail.
//
// It is a package of its own, not part of package audit, so that package
// rebuild (which the audit's tests import) can use it without a cycle.
package findings

import (
	"context"
	"errors"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// Of turns err into failing findings; subject names what was being read,
// for errors that do not say. A nil error gives none.
func Of(err error, subject string) []report.Finding {
	if err == nil {
		return nil
	}
	if CouldNot(err) {
		return []report.Finding{report.ErrorOf(err, subject)}
	}
	var es safetensors.Errors
	if errors.As(err, &es) {
		out := make([]report.Finding, 0, len(es))
		for _, e := range es {
			out = append(out, finding(e))
		}
		return out
	}
	var e *safetensors.Error
	if errors.As(err, &e) {
		return []report.Finding{finding(e)}
	}
	return report.FindingsOf(err, subject)
}

// CouldNot tells whether err means the check could not be done, rather
// than that the artifact is bad: reading failed for a reason outside the
// artifact (the network, a refusal, a file changed on disk, a timeout, a
// cancellation). The check then ends with verdict error (report.ErrorOf).
func CouldNot(err error) bool {
	for _, s := range []error{report.ErrUnreachable, report.ErrRefused, report.ErrCORS, report.ErrChanged, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// Code is the finding code for a safetensors error.
func Code(err error) report.Code {
	switch {
	case errors.Is(err, safetensors.ErrHeader):
		return report.HeaderInvalid
	case errors.Is(err, safetensors.ErrLayout):
		return report.DataLayout
	case errors.Is(err, safetensors.ErrLimit):
		return report.LimitExceeded
	}
	return report.FileUnreadable
}

func finding(e *safetensors.Error) report.Finding {
	return report.Finding{Code: Code(e), Severity: report.Fail, Subject: e.Subject, Message: e.Msg}
}
