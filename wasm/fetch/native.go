//go:build !js

package fetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

func init() { Default = NetHTTP{} }

// NetHTTP is a Doer over net/http (Client nil: a client that follows
// redirects as CheckRedirect says).
type NetHTTP struct{ Client *http.Client }

// client follows redirects with CheckRedirect.
var client = &http.Client{CheckRedirect: CheckRedirect}

// CheckRedirect is the redirect policy of NetHTTP's default client: at most
// ten redirects, and the credentials (Authorization, Cookie) go only to the
// origin (scheme, host and port) the request was made to. net/http itself
// keeps them for the same host name on another port or scheme and for its
// subdomains (huggingface.co → cdn-lfs.huggingface.co): a Hub token would
// reach the CDN.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if !SameOrigin(req.URL, via[0].URL) {
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
	return nil
}

// Do sends req and reads at most req.Limit body bytes (no limit if 0).
func (n NetHTTP) Do(ctx context.Context, req *Request) (*Response, error) {
	d := req.AnswerWithin
	if d <= 0 {
		return n.do(ctx, req, func() {})
	}
	// Cancelled if the answer does not come in time; the timer is stopped
	// when it does, and the body is then read under ctx alone.
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	late := &NoAnswer{After: d}
	t := time.AfterFunc(d, func() { cancel(late) })
	resp, err := n.do(actx, req, func() { t.Stop() })
	if err != nil && ctx.Err() == nil && context.Cause(actx) == error(late) {
		return nil, late
	}
	return resp, err
}

// do sends req; answered is called as soon as the response's headers came
// (or the request failed).
func (n NetHTTP) do(ctx context.Context, req *Request, answered func()) (*Response, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, req.URL, body)
	if err != nil {
		return nil, err
	}
	for k, v := range req.Header {
		hr.Header.Set(k, v)
	}
	c := n.Client
	if c == nil {
		c = client
	}
	resp, err := c.Do(hr)
	answered()
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &Response{Status: resp.StatusCode, Header: map[string]string{}}
	if resp.Request != nil && resp.Request.URL != nil {
		out.URL = resp.Request.URL.String()
	}
	for k, v := range resp.Header {
		out.Header[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	if cl := resp.ContentLength; req.Into != nil && cl >= 0 && cl <= int64(len(req.Into)) && (req.Limit <= 0 || cl <= req.Limit) {
		// Straight into the caller's buffer. A body cut short is an
		// error (io.ErrUnexpectedEOF), as below.
		if _, err := io.ReadFull(resp.Body, req.Into[:cl]); err != nil {
			return nil, err
		}
		out.Body = req.Into[:cl]
		return out, nil
	}
	r := io.Reader(resp.Body)
	if req.Limit > 0 {
		r = io.LimitReader(resp.Body, req.Limit+1)
	}
	var buf bytes.Buffer
	if cl := resp.ContentLength; cl > 0 && (req.Limit <= 0 || cl <= req.Limit) {
		buf.Grow(int(cl) + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	out.Body = buf.Bytes()
	if req.Limit > 0 && int64(len(out.Body)) > req.Limit {
		out.Body, out.Truncated = out.Body[:req.Limit], true
	}
	return out, nil
}
