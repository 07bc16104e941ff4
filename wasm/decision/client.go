package decision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"mime"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/fetch"
)

// Client sends decisions to a server and distrusts what comes back.
//
//   - Each Decide has an overall deadline (Timeout) covering every attempt,
//     so a server that never answers, or trickles its body, cannot hang it.
//   - A response body over MaxResponse bytes is refused (after transparent
//     gzip decoding, so a gzip bomb is cut off too).
//   - The JSON must be strict: no duplicate keys, no trailing data, the
//     schema's types, an id and option list that echo the request, one
//     logit and one probability per option, a choice among the options.
//   - Only network errors, 429 and 503 are retried, at most Retries times,
//     with jittered exponential backoff and a Retry-After capped at
//     MaxRetryAfter; other 4xx and 5xx are not retried; 401 and 403 come
//     with a hint about the token.
type Client struct {
	BaseURL       string
	Token         string
	Timeout       time.Duration // per decision, all attempts (default 60 s)
	MaxResponse   int64         // bytes (default 64 MiB)
	Retries       int           // extra attempts (0: the default 3; negative: none)
	Backoff       time.Duration // first backoff (default 250 ms)
	MaxRetryAfter time.Duration // cap on a server's Retry-After (default 10 s)
	Doer          fetch.Doer    // nil: fetch.Default (net/http, or the browser's fetch)
}

// Error is a failed decision: Kind is network, timeout, status, protocol
// or request.
type Error struct {
	Kind     string
	Status   int
	Msg      string
	Hint     string
	Attempts int
}

func (e *Error) Error() string {
	s := e.Msg
	if e.Status != 0 {
		s = fmt.Sprintf("HTTP %d: %s", e.Status, s)
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
}

func (c *Client) defaults() (time.Duration, int64, int, time.Duration, time.Duration, fetch.Doer) {
	t, m, r, b, ra, h := c.Timeout, c.MaxResponse, c.Retries, c.Backoff, c.MaxRetryAfter, fetch.Or(c.Doer)
	if t <= 0 {
		t = 60 * time.Second
	}
	if m <= 0 {
		m = 64 << 20
	}
	switch {
	case r < 0: // no retries
		r = 0
	case r == 0:
		r = 3
	}
	if b <= 0 {
		b = 250 * time.Millisecond
	}
	if ra <= 0 {
		ra = 10 * time.Second
	}
	return t, m, r, b, ra, h
}

// Endpoint is the decision URL for the base URL.
func (c *Client) Endpoint() (string, error) {
	u, err := url.Parse(strings.TrimSpace(c.BaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", &Error{Kind: "request", Msg: fmt.Sprintf("server URL %q is not an http(s) URL", c.BaseURL)}
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(u.Path, Path) {
		u.Path += Path
	}
	return u.String(), nil
}

// Decide sends one request.
func (c *Client) Decide(ctx context.Context, req *Request) (*Response, error) {
	timeout, maxResp, retries, backoff, maxRA, hc := c.defaults()
	if err := req.Validate(); err != nil {
		return nil, &Error{Kind: "request", Msg: err.Error()}
	}
	endpoint, err := c.Endpoint()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, &Error{Kind: "request", Msg: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last *Error
	for attempt := 0; attempt <= retries; attempt++ {
		resp, wait, err := c.once(ctx, hc, endpoint, body, req, maxResp)
		if err == nil {
			return resp, nil
		}
		last = err
		last.Attempts = attempt + 1
		retryable := err.Kind == "network" || err.Status == 429 || err.Status == 503
		if !retryable || attempt == retries {
			break
		}
		d := backoff << attempt
		d = d/2 + time.Duration(rand.Int64N(int64(d)))
		if wait > 0 {
			d = min(wait, maxRA)
		}
		select {
		case <-ctx.Done():
			return nil, &Error{Kind: "timeout", Msg: fmt.Sprintf("gave up after %d attempts and %v: %s", attempt+1, timeout, last.Msg), Attempts: attempt + 1}
		case <-time.After(d):
		}
	}
	return nil, last
}

func (c *Client) once(ctx context.Context, hc fetch.Doer, endpoint string, body []byte, req *Request, maxResp int64) (*Response, time.Duration, *Error) {
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	if c.Token != "" {
		hdr["Authorization"] = "Bearer " + c.Token
	}
	resp, err := hc.Do(ctx, &fetch.Request{Method: "POST", URL: endpoint, Header: hdr, Body: body, Limit: maxResp})
	if err != nil {
		return nil, 0, netError(ctx, err)
	}
	if resp.Truncated {
		return nil, 0, &Error{Kind: "protocol", Status: resp.Status, Msg: fmt.Sprintf("response body over %d bytes: refused", maxResp)}
	}
	data := resp.Body
	if resp.Status != 200 {
		e := &Error{Kind: "status", Status: resp.Status, Msg: errorMessage(resp, data)}
		switch resp.Status {
		case 401:
			e.Hint = "the server wants a bearer token: set the token"
			if c.Token != "" {
				e.Hint = "the server refused the token"
			}
		case 403:
			e.Hint = "the token is not allowed to use this server"
		case 404:
			e.Hint = "is " + endpoint + " the decision service? It answers POST " + Path
		}
		return nil, fetch.RetryAfter(resp.Get("Retry-After"), time.Now()), e
	}
	if mt, _, _ := mime.ParseMediaType(resp.Get("Content-Type")); mt != "" && mt != "application/json" {
		return nil, 0, &Error{Kind: "protocol", Status: 200, Msg: fmt.Sprintf("response is %s, not JSON: %s", mt, snippet(data))}
	}
	out, perr := parseResponse(data, req)
	if perr != nil {
		return nil, 0, &Error{Kind: "protocol", Status: 200, Msg: perr.Error()}
	}
	return out, 0, nil
}

// parseResponse decodes and validates a decision strictly.
func parseResponse(data []byte, req *Request) (*Response, error) {
	if err := checkDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var r Response
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("malformed decision: %v: %s", err, snippet(data))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON object")
	}
	switch {
	case r.ID != req.ID:
		return nil, fmt.Errorf("the response's id %q does not echo the request's %q", r.ID, req.ID)
	case !slices.Equal(r.Options, req.Options):
		return nil, fmt.Errorf("the response's options %q do not echo the request's %q", r.Options, req.Options)
	case len(r.Logits) != len(req.Options) || len(r.Probs) != len(req.Options):
		return nil, fmt.Errorf("%d options but %d logits and %d probs", len(req.Options), len(r.Logits), len(r.Probs))
	}
	if !slices.Contains(req.Options, r.Choice) {
		return nil, fmt.Errorf("choice %q is not one of the options", r.Choice)
	}
	sum := 0.0
	for i := range r.Logits {
		if math.IsNaN(r.Logits[i]) || math.IsInf(r.Logits[i], 0) || !(r.Probs[i] >= 0 && r.Probs[i] <= 1) {
			return nil, fmt.Errorf("option %q has logit %v and probability %v", req.Options[i], r.Logits[i], r.Probs[i])
		}
		sum += r.Probs[i]
	}
	if math.Abs(sum-1) > 1e-3 {
		return nil, fmt.Errorf("probabilities sum to %.6g, not 1", sum)
	}
	if req.ReturnHidden {
		if r.Hidden == nil || len(r.InputIDs) == 0 {
			return nil, errors.New("hidden states were asked for but not returned")
		}
		vals, err := r.Hidden.Floats()
		if err != nil {
			return nil, err
		}
		if len(r.Hidden.Shape) == 3 && r.Hidden.Shape[1] != len(r.InputIDs) {
			return nil, fmt.Errorf("hidden states cover %d positions, input_ids has %d", r.Hidden.Shape[1], len(r.InputIDs))
		}
		_ = vals
	}
	return &r, nil
}

func netError(ctx context.Context, err error) *Error {
	if ctx.Err() != nil {
		return &Error{Kind: "timeout", Msg: "no complete answer before the deadline: " + ctx.Err().Error()}
	}
	msg := err.Error()
	e := &Error{Kind: "network", Msg: msg}
	if fetch.IsTimeout(err) {
		e.Kind = "timeout"
	}
	// In the browser, net/http is fetch: a CORS refusal shows only as this.
	if strings.Contains(msg, "fetch() failed") || strings.Contains(msg, "TypeError") || strings.Contains(msg, "Failed to fetch") {
		e.Hint = "from a web page this usually means the server does not answer CORS for this origin (or is unreachable): run `clefcheck proxy --to <server>` and use the proxy's URL"
	}
	return e
}

func errorMessage(resp *fetch.Response, data []byte) string {
	var eb ErrorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error.Message != "" {
		if eb.Error.Type != "" {
			return eb.Error.Type + ": " + eb.Error.Message
		}
		return eb.Error.Message
	}
	mt, _, _ := mime.ParseMediaType(resp.Get("Content-Type"))
	if mt == "text/html" {
		return "an HTML page instead of a JSON error (a proxy or the wrong URL?): " + snippet(data)
	}
	return snippet(data)
}

func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return strconv.Quote(s)
}
