package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"

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
type HTTP struct {
	Base  *url.URL
	Doer  fetch.Doer // nil: fetch.Default
	Token string     // optional bearer token
	RangeFS
}

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
// of at most FirstChunk bytes.
func (r *httpRanger) Probe(ctx context.Context, name string, n int) (int64, []byte, error) {
	h := (*HTTP)(r)
	data, size, err := h.get(ctx, h.URL(name), 0, int64(max(n, 1)))
	return size, data, err
}

// ReadRange fills p with one Range request.
func (r *httpRanger) ReadRange(ctx context.Context, name string, off int64, p []byte) error {
	h := (*HTTP)(r)
	u := h.URL(name)
	data, _, err := h.get(ctx, u, off, int64(len(p)))
	if err != nil {
		return err
	}
	if len(data) != len(p) {
		return fmt.Errorf("%s: asked for %d bytes at %d, the server sent %d", u, len(p), off, len(data))
	}
	copy(p, data)
	return nil
}

// get fetches [off, off+n) (clamped to the file) of the file at u and
// returns the bytes and the file's total size.
func (h *HTTP) get(ctx context.Context, u string, off, n int64) ([]byte, int64, error) {
	hdr := map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", off, off+n-1)}
	if h.Token != "" {
		hdr["Authorization"] = "Bearer " + h.Token
	}
	// A 200 (no range support) is read only as far as a small whole file.
	limit := max(n, int64(max(h.FirstChunk, 1))) + 1
	resp, err := fetch.Or(h.Doer).Do(ctx, &fetch.Request{URL: u, Header: hdr, Limit: limit})
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "fetch() failed") || strings.Contains(msg, "Failed to fetch") {
			return nil, 0, fmt.Errorf("%s: %v (from a web page this usually means the server does not allow this origin (CORS) or is unreachable)", u, err)
		}
		return nil, 0, err
	}
	switch resp.Status {
	case 206: // Partial Content
		start, end, total, err := parseContentRange(resp.Get("Content-Range"))
		if err != nil {
			return nil, 0, err
		}
		if start != off || end-start+1 > n {
			return nil, 0, fmt.Errorf("asked for bytes %d–%d, the server sent %d–%d", off, off+n-1, start, end)
		}
		if int64(len(resp.Body)) != end-start+1 {
			return nil, 0, fmt.Errorf("the server sent %d bytes for a range of %d", len(resp.Body), end-start+1)
		}
		return resp.Body, total, nil
	case 200:
		// No range support: acceptable only for a small whole file (which
		// Probe then keeps whole).
		if int64(len(resp.Body)) > int64(max(h.FirstChunk, 1)) || resp.Truncated || off != 0 {
			return nil, 0, errRange
		}
		return resp.Body, int64(len(resp.Body)), nil
	case 416: // Range Not Satisfiable
		// An empty file: the Content-Range gives "*/0".
		if _, _, total, err := parseContentRange(resp.Get("Content-Range")); err == nil && total == 0 {
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("range %d–%d not satisfiable", off, off+n-1)
	case 404, 410:
		return nil, 0, fs.ErrNotExist
	case 401, 403:
		return nil, 0, fmt.Errorf("HTTP %d: %s needs a token (or the token lacks access)", resp.Status, u)
	}
	return nil, 0, fmt.Errorf("HTTP %d from %s", resp.Status, u)
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
