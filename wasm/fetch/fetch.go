package fetch

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Request is one HTTP request.
type Request struct {
	Method string // "" means GET
	URL    string
	Header map[string]string
	Body   []byte
	// Limit is the most body bytes read; a longer body is cut there and
	// the response marked Truncated (the rest is never read).
	Limit int64
	// Into, when set, is where a body that fits is read: Response.Body is
	// then Into[:n], with no buffer of its own (natively with no copy, in
	// the browser with the one copy out of JavaScript). A Range read passes
	// its destination.
	Into []byte
	// AnswerWithin, when set, is the most time until the response's
	// headers: a request with no answer by then is aborted with a
	// *NoAnswer (a timeout), so that a stalled connection is tried again
	// rather than waited on for the whole of its caller's deadline. The
	// body, once the answer came, is read under the caller's context alone.
	AnswerWithin time.Duration
}

// NoAnswer is a request aborted for want of an answer within
// Request.AnswerWithin.
type NoAnswer struct{ After time.Duration }

func (e *NoAnswer) Error() string {
	return fmt.Sprintf("no answer within %v (the request was aborted, to be tried again)", e.After)
}

func (*NoAnswer) Timeout() bool { return true }

// Response is a response with its body read.
type Response struct {
	Status    int
	Header    map[string]string // keys in lower case
	Body      []byte
	Truncated bool
	// URL is where the answer came from, after redirects ("" when the
	// transport does not say): a Hub resolve URL's CDN location.
	URL string
}

// Get returns a header's value (case-insensitive name).
func (r *Response) Get(name string) string { return r.Header[strings.ToLower(name)] }

// Doer performs requests. Errors are transport failures (no response, or a
// body cut short); a timeout error has a Timeout() bool method that says so.
type Doer interface {
	Do(ctx context.Context, req *Request) (*Response, error)
}

// ErrFetchFailed is what a browser's fetch() gives for any failure before
// an answer: a network error, or a cross-origin request the host refused
// (the page cannot tell which). The browser's Doer wraps it.
var ErrFetchFailed = errors.New("fetch() failed")

// Default is the Doer used when none is given: net/http natively, the
// browser's fetch once wasm/browser.Install has run.
var Default Doer = missing{}

// Or returns d, or Default when d is nil.
func Or(d Doer) Doer {
	if d != nil {
		return d
	}
	return Default
}

type missing struct{}

func (missing) Do(context.Context, *Request) (*Response, error) {
	return nil, errors.New("fetch: no HTTP transport installed (in the browser, call browser.Install)")
}

// IsTimeout reports whether err says a deadline passed.
func IsTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &t) && t.Timeout())
}

// TimeFormat is HTTP's date format (RFC 9110 IMF-fixdate), as in Retry-After.
const TimeFormat = "Mon, 02 Jan 2006 15:04:05 GMT"

// RetryAfter reads a Retry-After value (seconds or a date); 0 if absent or
// malformed.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	secs := 0
	for _, c := range v {
		if c < '0' || c > '9' || secs > 1e8 {
			secs = -1
			break
		}
		secs = secs*10 + int(c-'0')
	}
	if secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := time.Parse(TimeFormat, v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// SameOrigin tells whether a and b have the same scheme, host and port.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
