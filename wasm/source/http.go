package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/fetch"
)

// HTTP is a base URL as an fs.FS whose files are read with HTTP Range
// requests: nothing is downloaded whole. A Hugging Face "resolve" URL of a
// repository folder, or any server that honours Range, works. In the
// browser the requests go through the page's fetch (wasm/browser), so the
// same code runs there.
type HTTP struct {
	Base  *url.URL
	Doer  fetch.Doer // nil: fetch.Default
	Token string     // optional bearer token
	// FirstChunk is how much Open reads and keeps from the start of a file
	// (the safetensors header usually fits): one request for the size and
	// the header together.
	FirstChunk int
	// ReadAhead, when positive, makes a large read fetch at least this many
	// bytes and keep them (one window per file): sequential tensor reads
	// then cost one request per window, not one each. The browser's audit
	// workers, which read neighbouring pairs, set it.
	ReadAhead int64
	Ctx       context.Context
	// Bytes handed over by Preload, one span per file.
	pmu     sync.Mutex
	preload map[string]span
}

type span struct {
	off  int64
	data []byte
}

// Preload hands over bytes [off, off+len(data)) of file name, fetched by
// someone else (the browser's page fetches for its audit workers while they
// compute): reads inside the span are served from it, with no request. It
// replaces the file's previous span; data must not change afterwards.
func (h *HTTP) Preload(name string, off int64, data []byte) {
	h.pmu.Lock()
	defer h.pmu.Unlock()
	if h.preload == nil {
		h.preload = map[string]span{}
	}
	h.preload[name] = span{off, data}
}

// fromPreload fills p from the preloaded span of name if it holds all of it.
func (h *HTTP) fromPreload(name string, p []byte, off int64) bool {
	h.pmu.Lock()
	sp, ok := h.preload[name]
	h.pmu.Unlock()
	if !ok || off < sp.off || off+int64(len(p)) > sp.off+int64(len(sp.data)) {
		return false
	}
	copy(p, sp.data[off-sp.off:])
	return true
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
	return &HTTP{Base: u, FirstChunk: 64 << 10}, nil
}

func (h *HTTP) ctx() context.Context {
	if h.Ctx != nil {
		return h.Ctx
	}
	return context.Background()
}

// URL is the address of name.
func (h *HTTP) URL(name string) string {
	u := *h.Base
	u.Path = path.Join(h.Base.Path, name)
	return u.String()
}

// Open fetches the first chunk of name with a Range request, which also
// gives the file's size (Content-Range). A server that ignores Range is
// accepted only for files of at most FirstChunk bytes.
func (h *HTTP) Open(name string) (fs.File, error) { return h.open(name, max(h.FirstChunk, 1)) }

func (h *HTTP) open(name string, n int) (*httpFile, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	f := &httpFile{h: h, name: name, url: h.URL(name)}
	data, size, err := f.get(0, int64(n))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f.head, f.size = data, size
	return f, nil
}

// Stat reports a file's size (fs.StatFS), with one small request.
func (h *HTTP) Stat(name string) (fs.FileInfo, error) {
	f, err := h.open(name, 1)
	if err != nil {
		return nil, err
	}
	return f.Stat()
}

type httpFile struct {
	h    *HTTP
	name string
	url  string
	size int64
	head []byte // bytes [0, len(head)) of the file
	mu   sync.Mutex
	off  int64 // for Read
	// Small reads are served from chunks of ChunkSize bytes, themselves
	// read by range: many small tensors then cost a few requests, not one
	// each. At most maxChunks are kept (memory stays bounded).
	cmu    sync.Mutex
	chunks map[int64][]byte
	order  []int64
	// The read-ahead window: bytes [winOff, winOff+len(win)).
	win    []byte
	winOff int64
}

// ChunkSize is the read-ahead unit for small reads; reads of at least this
// size go to the server as they are.
const ChunkSize = 1 << 20

const maxChunks = 8

// errRange means the server does not serve ranges.
var errRange = errors.New("the server ignores HTTP Range requests (needed to read large files in place)")

// get fetches [off, off+n) (clamped to the file) and returns the bytes and
// the file's total size.
func (f *httpFile) get(off, n int64) ([]byte, int64, error) {
	hdr := map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", off, off+n-1)}
	if f.h.Token != "" {
		hdr["Authorization"] = "Bearer " + f.h.Token
	}
	// A 200 (no range support) is read only as far as a small whole file.
	limit := max(n, int64(max(f.h.FirstChunk, 1))) + 1
	resp, err := fetch.Or(f.h.Doer).Do(f.h.ctx(), &fetch.Request{URL: f.url, Header: hdr, Limit: limit})
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "fetch() failed") || strings.Contains(msg, "Failed to fetch") {
			return nil, 0, fmt.Errorf("%s: %v (from a web page this usually means the server does not allow this origin (CORS) or is unreachable)", f.url, err)
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
		// No range support: acceptable only for a small whole file.
		if int64(len(resp.Body)) > int64(max(f.h.FirstChunk, 1)) || resp.Truncated || off != 0 {
			return nil, 0, errRange
		}
		f.head = resp.Body
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
		return nil, 0, fmt.Errorf("HTTP %d: %s needs a token (or the token lacks access)", resp.Status, f.url)
	}
	return nil, 0, fmt.Errorf("HTTP %d from %s", resp.Status, f.url)
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

func (f *httpFile) Size() int64 { return f.size }

// ReadAt serves from the first chunk when it can, else with one Range
// request for exactly the bytes asked.
func (f *httpFile) ReadAt(p []byte, off int64) (int, error) {
	want, done, err := Span(off, len(p), f.size)
	if done {
		return 0, err
	}
	switch {
	case off+want <= int64(len(f.head)):
		copy(p, f.head[off:off+want])
	case f.h.fromPreload(f.name, p[:want], off):
	case f.fromWindow(p[:want], off):
	case want < ChunkSize:
		if err := f.fromChunks(p[:want], off); err != nil {
			return 0, err
		}
	case f.h.ReadAhead > want:
		n := min(f.h.ReadAhead, f.size-off)
		data, _, err := f.get(off, n)
		if err != nil {
			return 0, err
		}
		copy(p, data)
		f.cmu.Lock()
		f.win, f.winOff = data, off
		f.cmu.Unlock()
	default:
		data, _, err := f.get(off, want)
		if err != nil {
			return 0, err
		}
		copy(p, data)
	}
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

// fromWindow fills p from the read-ahead window if it holds all of it.
func (f *httpFile) fromWindow(p []byte, off int64) bool {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if f.win == nil || off < f.winOff || off+int64(len(p)) > f.winOff+int64(len(f.win)) {
		return false
	}
	copy(p, f.win[off-f.winOff:])
	return true
}

// fromChunks fills p from the chunks covering [off, off+len(p)).
func (f *httpFile) fromChunks(p []byte, off int64) error {
	for len(p) > 0 {
		c := off / ChunkSize * ChunkSize
		data, err := f.chunk(c)
		if err != nil {
			return err
		}
		n := copy(p, data[off-c:])
		p, off = p[n:], off+int64(n)
	}
	return nil
}

func (f *httpFile) chunk(c int64) ([]byte, error) {
	f.cmu.Lock()
	data, ok := f.chunks[c]
	f.cmu.Unlock()
	if ok {
		return data, nil
	}
	data, _, err := f.get(c, min(ChunkSize, f.size-c))
	if err != nil {
		return nil, err
	}
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if f.chunks == nil {
		f.chunks = map[int64][]byte{}
	}
	if _, ok := f.chunks[c]; !ok {
		f.chunks[c] = data
		f.order = append(f.order, c)
		if len(f.order) > maxChunks {
			delete(f.chunks, f.order[0])
			f.order = f.order[1:]
		}
	}
	return data, nil
}

func (f *httpFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *httpFile) Stat() (fs.FileInfo, error) { return httpInfo{f}, nil }
func (f *httpFile) Close() error               { return nil }

type httpInfo struct{ f *httpFile }

func (i httpInfo) Name() string       { return path.Base(i.f.name) }
func (i httpInfo) Size() int64        { return i.f.size }
func (i httpInfo) Mode() fs.FileMode  { return 0o444 }
func (i httpInfo) ModTime() time.Time { return time.Time{} }
func (i httpInfo) IsDir() bool        { return false }
func (i httpInfo) Sys() any           { return nil }
