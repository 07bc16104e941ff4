package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Retry is how an HTTP source retries a range read: network errors,
// resets, bodies cut short, 5xx and 429 are tried again, up to Attempts
// tries in all and never past Budget from the read's start, waiting
// between tries an exponential backoff with jitter (Base, doubling, at
// most Max; each wait is drawn between half and all of it), or the
// server's Retry-After (seconds or an HTTP date) capped at MaxRetryAfter.
// A permanent answer (404, 410, 401, 403, 416 on a non-empty file, Range
// ignored for a large file) is not retried. The zero value is DefaultRetry.
type Retry struct {
	Attempts      int
	Budget        time.Duration
	Base, Max     time.Duration
	MaxRetryAfter time.Duration
	// Answer is the most time one try waits for its answer (the
	// response's headers; the body may take longer): a connection that
	// stalls before answering is aborted and tried again, instead of
	// holding the read for the whole Budget.
	Answer time.Duration
}

// DefaultRetry is the policy of a source whose Retry is zero: 10 attempts
// within 2 minutes, waits of 0.5, 1, 2, 4, 8 and then 15 s (each drawn
// between half and all of it), a Retry-After honoured up to 30 s.
//
// Ten, not five or six: one try in the browser crosses two hops that can
// fail (the Hub's 302 and the CDN's answer), so on a link that faults one
// request in five a try fails about one time in three, and six tries all
// failed for about one read in 500 — a few times in a 1.4 GB audit of 120
// reads. Ten make that about 4 in 100,000 reads, within the same budget
// (rclone's --low-level-retries is 10 too).
//
// A try with no answer within 30 s is tried again: a Hub, a CDN or a
// static host answers within a second or two, ranges of any size (the
// headers come before the body), so 30 s is a stalled connection, and
// the budget still has room for three more tries.
var DefaultRetry = Retry{Attempts: 10, Budget: 2 * time.Minute, Base: 500 * time.Millisecond, Max: 15 * time.Second, MaxRetryAfter: 30 * time.Second, Answer: 30 * time.Second}

func (r Retry) orDefault() Retry {
	d := DefaultRetry
	if r.Attempts > 0 {
		d.Attempts = r.Attempts
	}
	if r.Budget > 0 {
		d.Budget = r.Budget
	}
	if r.Base > 0 {
		d.Base = r.Base
	}
	if r.Max > 0 {
		d.Max = r.Max
	}
	if r.MaxRetryAfter > 0 {
		d.MaxRetryAfter = r.MaxRetryAfter
	}
	if r.Answer > 0 {
		d.Answer = r.Answer
	}
	return d
}

// wait is the pause before try number attempt+1 (attempt ≥ 1 tries made),
// or the server's Retry-After when it gave one.
func (r Retry) wait(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, r.MaxRetryAfter)
	}
	d := r.Base << min(attempt-1, 20)
	if d <= 0 || d > r.Max {
		d = r.Max
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Error is a range read of an HTTP source that failed: the file's URL
// (without a query string, clipped), what went wrong, after how many
// attempts. errors.Is sees its kind — report.ErrMissing (and
// fs.ErrNotExist), report.ErrRefused, report.ErrCORS or
// report.ErrUnreachable; nil for a server that answers wrongly — and the
// last transport error.
type Error struct {
	URL      string
	Status   int // the last HTTP status (0: no answer)
	Attempts int
	Msg      string
	Kind     error
	Err      error
}

func (e *Error) Error() string {
	s := e.URL + ": " + e.Msg
	if e.Attempts > 1 && e.Kind != report.ErrUnreachable && e.Kind != report.ErrCORS {
		s += fmt.Sprintf(" (%d attempts)", e.Attempts)
	}
	return s
}

func (e *Error) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if errors.Is(e.Kind, report.ErrMissing) {
		out = append(out, fs.ErrNotExist)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// publicURL is u without its query string and fragment (a signed URL's
// secrets), clipped for messages.
func publicURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return report.Clip(u, 200)
}
