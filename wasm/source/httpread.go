package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/kvit-s/clefcheck/wasm/fetch"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// maxResolves is how many times one read goes back to a file's own URL
// for a fresh redirect after its CDN location refused.
const maxResolves = 2

// read fetches [off, off+n) (clamped to the file) of name with send, as
// Retry says, and returns the length of the range received and the file's
// total size.
func (h *HTTP) read(ctx context.Context, name string, off, n int64, send Sender) (got, total int64, err error) {
	orig := h.URL(name)
	pol := h.Retry.orDefault()
	attempts := pol.Attempts
	if h.down.Load() {
		// The last read that gave up never got an answer (a dead host, a
		// refused origin): one retry, not five, until the host answers.
		attempts = min(attempts, 2)
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, pol.Budget)
	defer cancel()
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	resolves := 0
	var last error // the last transient failure
	lastStatus := 0
	answered := false // some try got an HTTP answer
	for try := 1; ; try++ {
		if try > 1 {
			h.retries.Add(1)
		}
		u := h.location(orig)
		hdr := map[string]string{"Range": rng}
		if h.Token != "" && h.sameOrigin(u) {
			hdr["Authorization"] = "Bearer " + h.Token
		}
		resp, blen, err := send(rctx, u, hdr)
		if cerr := ctx.Err(); cerr != nil {
			return 0, 0, fmt.Errorf("%s: %w", publicURL(orig), cerr)
		}
		var retryAfter time.Duration
		if err != nil {
			if rctx.Err() != nil {
				// The budget ended during this try: the failure before it
				// says more than the deadline does.
				if last != nil {
					err = last
				}
				return 0, 0, h.giveUp(orig, start, try, lastStatus, answered, fmt.Sprintf("the %v allowed", pol.Budget), err)
			}
			last, lastStatus = transportError(err), 0
		} else {
			h.down.Store(false)
			answered = true
			fresh := resp.URL != "" && resp.URL != u // redirected just now
			stale := u != orig                       // a location learnt before
			if fresh && resp.URL != orig {
				h.setLocation(orig, resp.URL)
			}
			st := resp.Status
			switch {
			case st == 206 || st == 200 || st == 416:
				got, total, err := h.accept(resp, blen, orig, off, n)
				if err == nil && st != 416 {
					err = h.same(name, orig, resp, total, try)
				}
				var short *shortError
				if !errors.As(err, &short) {
					return got, total, err
				}
				last, lastStatus = short, st
			case resolves < maxResolves && ((stale && (st == 401 || st == 403 || st == 404 || st == 410)) ||
				(fresh && (st == 401 || st == 403 || st == 410))):
				// The CDN's signed URL expired (or was refused): ask the
				// file's own URL for a fresh one, now.
				h.setLocation(orig, "")
				resolves++
				if try < attempts+maxResolves {
					continue
				}
				return 0, 0, refused(orig, st, resp, try)
			case st == 404 || st == 410 || st == 401 || st == 403:
				return 0, 0, refused(orig, st, resp, try)
			case st == 429 || st >= 500:
				last, lastStatus = fmt.Errorf("HTTP %d", st), st
				retryAfter = fetch.RetryAfter(resp.Get("Retry-After"), time.Now())
			default:
				return 0, 0, &Error{URL: publicURL(orig), Status: st, Attempts: try, Msg: fmt.Sprintf("HTTP %d", st)}
			}
		}
		if try >= attempts+resolves {
			return 0, 0, h.giveUp(orig, start, try, lastStatus, answered, "", last)
		}
		wait := pol.wait(try-resolves, retryAfter)
		if time.Since(start)+wait > pol.Budget {
			return 0, 0, h.giveUp(orig, start, try, lastStatus, answered, fmt.Sprintf("as the next would start after the %v allowed", pol.Budget), last)
		}
		if err := sleep(rctx, wait); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", publicURL(orig), ctx.Err())
		}
	}
}

// accept checks a 206, 200 or 416 answer to a request for [off, off+n):
// a body shorter than its Content-Range is a *shortError, which the
// caller retries.
func (h *HTTP) accept(resp *fetch.Response, blen int64, orig string, off, n int64) (int64, int64, error) {
	bad := func(format string, a ...any) (int64, int64, error) {
		return 0, 0, &Error{URL: publicURL(orig), Status: resp.Status, Msg: fmt.Sprintf(format, a...)}
	}
	switch resp.Status {
	case 206: // Partial Content
		start, end, total, err := parseContentRange(resp.Get("Content-Range"))
		if err != nil {
			return bad("%v", err)
		}
		if start != off || end-start+1 > n {
			return bad("asked for bytes %d–%d, the server sent %d–%d", off, off+n-1, start, end)
		}
		if blen != end-start+1 {
			return 0, 0, &shortError{blen, end - start + 1}
		}
		return blen, total, nil
	case 200:
		// No range support: acceptable only for a small whole file (which
		// Probe then keeps whole).
		if blen > int64(max(h.FirstChunk, 1)) || resp.Truncated || off != 0 {
			return 0, 0, &Error{URL: publicURL(orig), Status: 200, Msg: errRange.Error(), Err: errRange}
		}
		return blen, blen, nil
	}
	// 416 Range Not Satisfiable: an empty file gives "*/0".
	if _, _, total, err := parseContentRange(resp.Get("Content-Range")); err == nil && total == 0 {
		return 0, 0, nil
	}
	return bad("range %d–%d not satisfiable", off, off+n-1)
}

// same checks that an answer names the file name's probe learnt (its
// total size; its ETag, when both are strong): a URL that now serves
// other bytes (a branch moved between two reads) would otherwise mix two
// files' bytes into one audit. A file at a commit cannot change; its
// probe may have come from the cache, which knows no ETag.
func (h *HTTP) same(name, orig string, resp *fetch.Response, total int64, try int) error {
	h.mu.Lock()
	m, ok := h.meta[name]
	h.mu.Unlock()
	if !ok {
		return nil // the probe itself
	}
	changed := func(format string, a ...any) error {
		return &Error{URL: publicURL(orig), Status: resp.Status, Attempts: try, Kind: report.ErrURLChanged,
			Msg: fmt.Sprintf(format, a...) + " between two reads of it: " + report.ErrURLChanged.Error()}
	}
	if total != m.size {
		return changed("the file's size went from %d to %d bytes", m.size, total)
	}
	if etag := resp.Get("ETag"); strongETag(m.etag) && strongETag(etag) && etag != m.etag {
		return changed("the server's ETag went from %s to %s", report.Clip(m.etag, 80), report.Clip(etag, 80))
	}
	return nil
}

// shortError is a body shorter than its Content-Range: a connection cut
// mid-body that the transport did not notice.
type shortError struct{ got, want int64 }

func (e *shortError) Error() string {
	return fmt.Sprintf("the body was cut short: %d of %d bytes", e.got, e.want)
}

// refused is the error for a permanent 404, 410, 401 or 403.
func refused(orig string, st int, resp *fetch.Response, try int) error {
	e := &Error{URL: publicURL(orig), Status: st, Attempts: try}
	code := report.Clip(resp.Get("X-Error-Code"), 60) // the Hub's RepoNotFound, GatedRepo, EntryNotFound
	if code != "" {
		code = " " + code
	}
	switch st {
	case 404, 410:
		e.Kind, e.Msg = report.ErrMissing, fmt.Sprintf("HTTP %d%s: not found", st, code)
	default:
		e.Kind, e.Msg = report.ErrRefused, fmt.Sprintf("HTTP %d%s: access refused (a token is needed, or the token lacks access)", st, code)
	}
	return e
}

// giveUp is the error of a read whose transient failures outlasted the
// policy (why says how, when it was not the attempts); the source is
// marked down when no try got an answer.
func (h *HTTP) giveUp(orig string, start time.Time, try, status int, answered bool, why string, last error) error {
	if !answered {
		h.down.Store(true)
	}
	e := &Error{URL: publicURL(orig), Status: status, Attempts: try, Kind: report.ErrUnreachable, Err: last}
	lastMsg := "no answer"
	if last != nil {
		lastMsg = last.Error()
	}
	if why != "" {
		why = ", " + why
	}
	gave := fmt.Sprintf("gave up after %d attempts in %.1f s%s", try, time.Since(start).Seconds(), why)
	if errors.Is(last, fetch.ErrFetchFailed) {
		e.Kind = report.ErrCORS
		e.Msg = fmt.Sprintf("the host refused this origin or could not be reached (%s; the last: %s)", gave, lastMsg)
		return e
	}
	e.Msg = fmt.Sprintf("unreachable: %s (the last: %s)", gave, lastMsg)
	return e
}

// transportError is err without net/http's *url.Error wrapper, which
// quotes the whole URL (a signed URL's query string too).
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// location is where the file at orig is read from: the URL it last
// redirected to, or orig.
func (h *HTTP) location(orig string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if l, ok := h.loc[orig]; ok {
		return l
	}
	return orig
}

// setLocation remembers where orig redirected to ("" forgets it).
func (h *HTTP) setLocation(orig, l string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case l == "":
		delete(h.loc, orig)
	case h.loc == nil:
		h.loc = map[string]string{orig: l}
	default:
		h.loc[orig] = l
	}
}

// sameOrigin tells whether u is on Base's origin (where the token may go).
func (h *HTTP) sameOrigin(u string) bool {
	p, err := url.Parse(u)
	return err == nil && fetch.SameOrigin(p, h.Base)
}
