//go:build js && wasm

package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/fetch"
)

// Install makes the page's fetch the engine's HTTP transport
// (fetch.Default). It needs clefcheck.js (public/), which defines
// clefcheckFetch.
func Install() { fetch.Default = Fetch{} }

// Fetch is a fetch.Doer over the browser's fetch(): the body is read in
// JavaScript up to the request's limit and copied to Go once.
type Fetch struct{}

type timeoutError struct{ error }

func (timeoutError) Timeout() bool { return true }

// NoAnswer is the *fetch.NoAnswer that err (a rejection of
// clefcheckFetch or clefcheckFetchRange) is, or nil.
func NoAnswer(err error, after time.Duration) error {
	if err == nil || !strings.Contains(err.Error(), "ClefcheckNoAnswer") {
		return nil
	}
	return &fetch.NoAnswer{After: after}
}

// Do performs req; cancelling ctx aborts the request.
func (Fetch) Do(ctx context.Context, req *fetch.Request) (*fetch.Response, error) {
	fn := js.Global().Get("clefcheckFetch")
	if fn.Type() != js.TypeFunction {
		return nil, errors.New("fetch: clefcheck.js is not loaded (clefcheckFetch is missing)")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	hdr := js.Global().Get("Object").New()
	for k, v := range req.Header {
		hdr.Set(k, v)
	}
	body := js.Null()
	if len(req.Body) > 0 {
		body = js.Global().Get("Uint8Array").New(len(req.Body))
		js.CopyBytesToJS(body, req.Body)
	}
	ac := js.Global().Get("AbortController").New()
	stop := context.AfterFunc(ctx, func() { ac.Call("abort") })
	defer stop()
	// A Range read into the caller's buffer comes through a kept
	// ArrayBuffer (buffers.go) when it is large.
	into := js.Undefined()
	if pooled(len(req.Into), "clefcheckReadInto") {
		into = TakeBuffer(len(req.Into))
		// Kept again unless the read took it (a transferred buffer reads
		// as 0 bytes long, which GiveBuffer drops).
		defer GiveBuffer(into)
	}
	v, err := Await(fn.Invoke(req.URL, req.Method, hdr, body, float64(req.Limit), ac.Get("signal"), float64(req.AnswerWithin.Milliseconds()), into))
	if err != nil {
		if na := NoAnswer(err, req.AnswerWithin); na != nil && ctx.Err() == nil {
			return nil, na
		}
		if ctx.Err() != nil {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, timeoutError{fmt.Errorf("request aborted: %w", ctx.Err())}
			}
			return nil, ctx.Err()
		}
		// A TypeError is all a page learns of a network or CORS failure.
		if strings.Contains(err.Error(), "TypeError") {
			return nil, fmt.Errorf("%w: %v", fetch.ErrFetchFailed, err)
		}
		return nil, err
	}
	out := &fetch.Response{Status: v.Get("status").Int(), Header: map[string]string{}, Truncated: v.Get("truncated").Bool()}
	if u := v.Get("url"); u.Type() == js.TypeString {
		out.URL = u.String()
	}
	keys := js.Global().Get("Object").Call("keys", v.Get("headers"))
	for i := 0; i < keys.Length(); i++ {
		k := keys.Index(i).String()
		out.Header[k] = v.Get("headers").Get(k).String()
	}
	b := v.Get("body")
	if n := b.Get("byteLength").Int(); n <= len(req.Into) {
		// Into the caller's buffer (a Range read's destination): no Go
		// buffer of its own per request (32 MB each for an audit's spans).
		out.Body = req.Into[:n]
	} else {
		out.Body = make([]byte, n)
	}
	js.CopyBytesToGo(out.Body, b)
	if into.Truthy() {
		GiveBuffer(b.Get("buffer")) // into's memory, handed back
	}
	return out, nil
}
