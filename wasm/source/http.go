package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvit-s/clefcheck/wasm/fetch"
)

// HTTP is a base URL as an fs.FS whose files are read with HTTP Range
// requests: nothing is downloaded whole. A Hugging Face "resolve" URL of a
// repository folder, or any server that honours Range, works. In the
// browser the requests go through the page's fetch (wasm/browser), so the
// same code runs there.
//
// It is a RangeFS over the server (Open, Stat, Preload and the caching
// fields are RangeFS's): Open makes one request for the first FirstChunk
// bytes, which also gives the size (Content-Range); small reads go through
// ChunkSize chunks; a large read is one request for exactly its bytes (or
// for a ReadAhead window, when set).
//
// Every request is retried as Retry says (network errors, bodies cut
// short, 5xx, 429); Retries counts the extra attempts. A file whose URL
// redirected (a Hub resolve URL answers 302 with a CDN's signed URL) is
// read from where it was answered until that refuses (401, 403, 404, 410:
// the signature expired), and then from its own URL again, which signs a
// fresh one. The token goes only to Base's origin, never to a CDN.
// Errors are *Error, whose kind errors.Is sees (report.ErrMissing,
// ErrRefused, ErrCORS, ErrUnreachable).
type HTTP struct {
	Base  *url.URL
	Doer  fetch.Doer // nil: fetch.Default
	Token string     // optional bearer token
	Retry Retry      // zero: DefaultRetry
	RangeFS

	mu      sync.Mutex
	loc     map[string]string // a file's URL → where it was last answered from
	cache   *Cache
	meta    map[string]fileMeta // by name: what its probe learnt
	retries atomic.Int64
	down    atomic.Bool // the last read that gave up never got an answer: retry less
}

// AnswerWithin is how long each try of a range read waits for its answer
// (the response's headers) before it is aborted and tried again
// (Retry.Answer).
func (h *HTTP) AnswerWithin() time.Duration { return h.Retry.orDefault().Answer }

// Retries is how many requests were attempts after a first (retries after
// a failure, and re-requests of a file's own URL for a fresh redirect).
func (h *HTTP) Retries() int64 { return h.retries.Load() }

// NewHTTP parses base, which must be an http(s) URL; a trailing slash is
// implied.
func NewHTTP(base string) (*HTTP, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("source: %q is not an http(s) URL", base)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawQuery, u.Fragment = "", ""
	h := &HTTP{Base: u}
	h.RangeFS = RangeFS{FirstChunk: 64 << 10, Chunk: ChunkSize, r: (*httpRanger)(h)}
	return h, nil
}

// URL is the address of name.
func (h *HTTP) URL(name string) string {
	u := *h.Base
	u.Path = path.Join(h.Base.Path, name)
	return u.String()
}

// ChunkSize is the read-ahead unit for small reads; reads of at least this
// size go to the server as they are.
const ChunkSize = 1 << 20

// errRange means the server does not serve ranges.
var errRange = errors.New("the server ignores HTTP Range requests (needed to read large files in place)")

// httpRanger is the server as a RangeFS's Ranger.
type httpRanger HTTP

// Probe fetches the first n bytes of name (at least one), which also gives
// the file's size. A server that ignores Range is accepted only for files
// of at most FirstChunk bytes. A file handed over with as many bytes (Seed)
// is probed from them, and with a cache, a file at a commit is probed from
// it when it holds the first bytes.
func (r *httpRanger) Probe(ctx context.Context, name string, n int) (int64, []byte, error) {
	h := (*HTTP)(r)
	if size, head, ok := h.seeded(name, max(n, 1)); ok {
		return size, head, nil
	}
	if h.cache != nil && h.atCommit(name) {
		if size, head, ok := h.cache.Head(h.cacheKey(name, ""), max(n, 1)); ok {
			h.learn(name, "", size, head)
			return size, head, nil
		}
	}
	var body []byte
	var etag string
	_, size, err := h.read(ctx, name, 0, int64(max(n, 1)), h.sender(int64(max(n, 1)), &body, &etag, nil))
	if err != nil {
		return 0, nil, err
	}
	h.learn(name, etag, size, body)
	if h.cache != nil && (len(body) >= minKept || int64(len(body)) == size) {
		h.cache.Put(h.cacheKey(name, etag), size, 0, body)
	}
	return size, body, nil
}

// ReadRange fills p with one Range request (more when it is retried), or
// from the cache and requests for what it lacks.
func (r *httpRanger) ReadRange(ctx context.Context, name string, off int64, p []byte) error {
	h := (*HTTP)(r)
	fetchInto := func(q []byte, off int64) (string, error) {
		var body []byte
		var etag string
		err := h.readExactly(ctx, name, off, int64(len(q)), h.sender(int64(len(q)), &body, &etag, q), func() {
			if len(body) > 0 && &body[0] != &q[0] { // not read into q
				copy(q, body)
			}
		})
		return etag, err
	}
	if h.cache == nil {
		_, err := fetchInto(p, off)
		return err
	}
	m := h.known(name)
	key := h.cacheKey(name, m.etag)
	return h.cache.Read(key, m.size, p, off, func(q []byte, off int64) (bool, error) {
		etag, err := fetchInto(q, off)
		// Kept only if the bytes came with the validator the key names.
		return err == nil && (h.atCommit(name) || (etag != "" && etag == m.etag)), err
	})
}

// ReadWith reads bytes [off, off+n) of name, which lie inside the file,
// with send making each request, under the source's policies (retries,
// redirects, the token's origin): the browser's dealer fetches the audit
// workers' segments with it, keeping the bytes in JavaScript.
func (h *HTTP) ReadWith(ctx context.Context, name string, off, n int64, send Sender) error {
	return h.readExactly(ctx, name, off, n, send, nil)
}

func (h *HTTP) readExactly(ctx context.Context, name string, off, n int64, send Sender, done func()) error {
	got, _, err := h.read(ctx, name, off, n, send)
	if err != nil {
		return err
	}
	if got != n {
		return &Error{URL: publicURL(h.URL(name)), Status: 206, Msg: fmt.Sprintf("asked for %d bytes at %d, the server sent %d", n, off, got)}
	}
	if done != nil {
		done()
	}
	return nil
}

// A Sender makes one Range request to u with header and returns the
// answer and its body's length; it may keep the body outside Go (the
// browser's dealer keeps an ArrayBuffer to transfer), resp.Body then nil.
type Sender func(ctx context.Context, u string, header map[string]string) (resp *fetch.Response, n int64, err error)

// sender makes requests through the Doer, keeping the last body in *body
// and its ETag in *etag; into, if not nil, is where the Doer may read the
// body (fetch.Request.Into: the Range read's destination, whatever a
// failed try left there overwritten by the next). A 200 (no range
// support) is read only as far as a small whole file.
func (h *HTTP) sender(n int64, body *[]byte, etag *string, into []byte) Sender {
	limit := max(n, int64(max(h.FirstChunk, 1))) + 1
	return func(ctx context.Context, u string, hdr map[string]string) (*fetch.Response, int64, error) {
		resp, err := fetch.Or(h.Doer).Do(ctx, &fetch.Request{URL: u, Header: hdr, Limit: limit, Into: into, AnswerWithin: h.AnswerWithin()})
		if err != nil {
			return nil, 0, err
		}
		*body, *etag = resp.Body, resp.Get("ETag")
		return resp, int64(len(resp.Body)), nil
	}
}

// parseContentRange reads "bytes START-END/TOTAL" (or "bytes */TOTAL").
func parseContentRange(v string) (start, end, total int64, err error) {
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %q (is it exposed to the page? Access-Control-Expose-Headers)", v)
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %q", v)
	}
	if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total < 0 {
		return 0, 0, 0, fmt.Errorf("Content-Range %q has no total size", v)
	}
	if rng == "*" {
		return 0, -1, total, nil
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %q", v)
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start || end >= total {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %q", v)
	}
	return start, end, total, nil
}
