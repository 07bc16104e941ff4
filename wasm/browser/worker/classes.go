//go:build js && wasm

package worker

import (
	"context"
	"errors"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// The could-not-check causes a pool worker's error carries to the dealer
// (msg.Error's Class), so that the audit's outcome still says missing,
// refused, unreachable or changed when the error crossed a worker boundary.
var classes = []struct {
	name string
	err  error
}{
	{"cancelled", context.Canceled},
	{"cors", report.ErrCORS},
	{"refused", report.ErrRefused},
	{"missing", report.ErrMissing},
	{"unreachable", report.ErrUnreachable},
	{"url-changed", report.ErrURLChanged}, // before "changed", which it wraps
	{"changed", report.ErrChanged},
}

// classOf names err's cause ("" when it is none of them).
func classOf(err error) string {
	for _, c := range classes {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return ""
}

// classError is an error received from a pool worker, with the sentinel
// of its class.
type classError struct {
	msg  string
	kind error
}

func (e *classError) Error() string { return e.msg }
func (e *classError) Unwrap() error { return e.kind }

// errorOf is the dealer's error for a pool worker's msg.Error.
func errorOf(msg, class string) error {
	for _, c := range classes {
		if c.name == class {
			return &classError{msg, c.err}
		}
	}
	return errors.New(msg)
}
