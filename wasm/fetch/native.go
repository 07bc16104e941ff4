//go:build !js

package fetch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
)

func init() { Default = NetHTTP{} }

// NetHTTP is a Doer over net/http (Client nil: http.DefaultClient).
type NetHTTP struct{ Client *http.Client }

// Do sends req and reads at most req.Limit body bytes (no limit if 0).
func (n NetHTTP) Do(ctx context.Context, req *Request) (*Response, error) {
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
		c = http.DefaultClient
	}
	resp, err := c.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := &Response{Status: resp.StatusCode, Header: map[string]string{}}
	for k, v := range resp.Header {
		out.Header[strings.ToLower(k)] = strings.Join(v, ", ")
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
