package safetensors

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error of the reader wraps one of them (errors.Is),
// or, for a file that cannot be opened at all, the file system's error
// (fs.ErrNotExist, …).
var (
	// ErrTruncated: the file ends before its header or a tensor does, or
	// reading it failed.
	ErrTruncated = errors.New("safetensors: file truncated")
	// ErrHeader: the header (or an index) is malformed: its length, JSON,
	// duplicate names, an unknown dtype, a bad shape or offsets.
	ErrHeader = errors.New("safetensors: invalid header")
	// ErrLayout: the tensors do not tile the data buffer (out of bounds,
	// overlapping, gaps, trailing bytes), or shards and index disagree.
	ErrLayout = errors.New("safetensors: invalid data layout")
	// ErrNoTensor: no tensor of that name.
	ErrNoTensor = errors.New("safetensors: no such tensor")
	// ErrNoCheckpoint: the folder holds neither the file nor an index of
	// shards (joined with fs.ErrNotExist): there is nothing to read.
	ErrNoCheckpoint = errors.New("safetensors: no checkpoint in the folder")
)

// Error is one violation: what it is about (a file or a tensor), what is
// wrong, and the sentinel (or underlying error) it wraps.
type Error struct {
	Subject string // the file or tensor
	Msg     string // what is wrong, for people
	Err     error  // a sentinel above, possibly joined with the cause
}

func (e *Error) Error() string {
	if e.Subject != "" {
		return e.Subject + ": " + e.Msg
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errors is every violation found in one file or checkpoint: the reader
// reports them all, not just the first.
type Errors []*Error

func (es Errors) Error() string {
	switch len(es) {
	case 0:
		return "no errors"
	case 1:
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

// errorf is an *Error about subject wrapping sentinel.
func errorf(sentinel error, subject, format string, a ...any) *Error {
	return &Error{Subject: subject, Msg: fmt.Sprintf(format, a...), Err: sentinel}
}

// errorfCause is errorf that also wraps cause (errors.Is sees both).
func errorfCause(sentinel, cause error, subject, format string, a ...any) *Error {
	e := errorf(sentinel, subject, format, a...)
	if cause != nil {
		e.Err = fmt.Errorf("%w: %w", sentinel, cause)
	}
	return e
}
