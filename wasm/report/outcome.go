package report

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

// The codes of findings that say a check could not be done (severity
// error; wasm/FORMATS.md): what was missing or refused, and how to fix it.
const (
	// InputMissing: an input does not exist (a local path, HTTP 404, the
	// Hub's EntryNotFound or RepoNotFound).
	InputMissing Code = "input.missing"
	// InputUnreachable: an input could not be read for a reason outside the
	// artifact: the network, a timeout, a server error, a refused
	// cross-origin request.
	InputUnreachable Code = "input.unreachable"
	// InputRefused: the host refused access (HTTP 401 or 403): a token is
	// needed, or the token lacks access.
	InputRefused Code = "input.refused"
	// InputChanged: an input changed while it was being read (a picked
	// file modified, moved or deleted on disk after it was picked): what
	// was read is not one file's bytes.
	InputChanged Code = "input.changed"
	// CheckCancelled: the check was stopped before it finished.
	CheckCancelled Code = "check.cancelled"
	// CheckEmpty: there was nothing to check (no records, no references,
	// nothing compared): no verdict can be given about the artifact.
	CheckEmpty Code = "check.empty"
	// CheckInvalid: the check was asked for in a way it cannot run (a bad
	// option, a missing argument).
	CheckInvalid Code = "check.invalid"
)

// Sentinel errors an input's reader wraps (with %w) so that the outcome
// says the right thing: a missing file is not a bad artifact.
var (
	ErrMissing     = errors.New("not found")
	ErrRefused     = errors.New("access refused")
	ErrCORS        = errors.New("cross-origin request refused")
	ErrUnreachable = errors.New("unreachable")
	ErrChanged     = errors.New("changed while it was read")
	// ErrURLChanged is ErrChanged for a URL: its server's answers named
	// another file (a new size or ETag) between two reads.
	ErrURLChanged = fmt.Errorf("the URL now serves other bytes: %w", ErrChanged)
)

// CouldNot tells whether err means the check could not be done (rather than
// that the artifact is bad): a missing or unreachable input, a refused
// request, a timeout or a cancellation.
func CouldNot(err error) bool {
	_, ok := classify(err)
	return ok
}

// classify sorts err into the could-not-check codes, with a hint.
func classify(err error) (struct {
	code Code
	hint string
}, bool) {
	type c = struct {
		code Code
		hint string
	}
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled):
		return c{CheckCancelled, "run it again to finish"}, true
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return c{InputUnreachable, "the host did not answer in time: check the URL and the connection, then run again"}, true
	case errors.Is(err, ErrCORS) || strings.Contains(msg, "fetch() failed") || strings.Contains(msg, "Failed to fetch"):
		return c{InputUnreachable, "from a web page this means the host refused this origin (CORS) or could not be reached: check the URL, or read it through `clefcheck proxy --to <host>`"}, true
	case errors.Is(err, ErrRefused) || strings.Contains(msg, "HTTP 401") || strings.Contains(msg, "HTTP 403"):
		return c{InputRefused, "the host wants a token, or the token lacks access: give one that can read it (request access first if the repository is gated)"}, true
	case errors.Is(err, ErrMissing) || errors.Is(err, fs.ErrNotExist):
		return c{InputMissing, "check the path or URL (and the revision): it names nothing"}, true
	case errors.Is(err, ErrURLChanged):
		return c{InputChanged, "the URL's content changed while it was read (a branch or tag moved to a new upload, a file replaced on the host): run again once it is stable, or audit a commit URL (/resolve/<commit>/), whose bytes never change"}, true
	case errors.Is(err, ErrChanged):
		return c{InputChanged, "the file was modified, moved or deleted after it was picked: pick it again once it is complete, then run again"}, true
	case errors.Is(err, ErrUnreachable):
		return c{InputUnreachable, "the host could not be reached or failed: check the URL and the connection, then run again"}, true
	}
	return c{}, false
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// Could builds a finding that says what could not be done (severity error).
func Could(code Code, subject, format string, a ...any) Finding {
	return Finding{Code: code, Severity: Unchecked, Subject: subject, Message: fmt.Sprintf(format, a...)}
}

// ErrorOf is the finding for an error that stopped a check, about subject:
// a could-not-check code with its hint when the cause is known, else
// check.invalid with the error's text.
func ErrorOf(err error, subject string) Finding {
	if c, ok := classify(err); ok {
		return Finding{Code: c.code, Severity: Unchecked, Subject: subject, Message: Clip(err.Error(), 600) + " — " + c.hint}
	}
	return Finding{Code: CheckInvalid, Severity: Unchecked, Subject: subject, Message: Clip(err.Error(), 600)}
}

// ErrorOutcome is the outcome of a check that err stopped: verdict error,
// with the finding that says why and how to fix it.
func ErrorOutcome(err error, subject string) Outcome {
	return Outcome{Verdict: VerdictError, Findings: []Finding{ErrorOf(err, subject)}}
}

// Cause is what a finding says without what is particular to its subject
// (the subject itself, the byte ranges it was read at): findings of one
// code with one Cause are alike — one cause that stopped many reads, such
// as a URL that changed mid-audit, which the page and the CLI show once
// with a count.
func Cause(f Finding) string {
	m := f.Message
	if f.Subject != "" {
		m = strings.ReplaceAll(m, f.Subject, "…")
	}
	return byteRange.ReplaceAllString(m, "bytes …")
}

// byteRange is a range of bytes as the engine's messages give it.
var byteRange = regexp.MustCompile(`bytes \d+[–-]\d+`)
