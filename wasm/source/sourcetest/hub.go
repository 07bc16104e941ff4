// Package sourcetest serves files the way the Hugging Face Hub does, with
// faults, for tests of the HTTP source natively and in the browser (pure
// Go, no test dependency: scripts/browsertest uses it too).
//
// A Hub has two listeners, so two origins: the resolve origin answers
// /{prefix}/resolve/{rev}/{path} — small files directly, large ones with a
// 302 to the CDN origin and a signed URL that expires after Expiry — and
// the CDN serves the bytes of a signed URL, Range included (one range per
// request). Both answer CORS for any origin (Access-Control-Allow-Origin:
// *, Content-Range and the Hub's headers exposed). A fraction FaultRate of
// all requests (on either origin) is faulted: the body cut in the middle,
// the connection reset before any answer, 503 or 429 with a Retry-After.
//
//	hub := sourcetest.NewHub(sourcetest.Options{Dir: world, Seed: 1})
//	defer hub.Close()
//	h, _ := source.NewHTTP(hub.Base("adapter"))
package sourcetest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is one way a request fails.
type Fault int

const (
	// Cut sends the headers and half the body, then closes the connection.
	Cut Fault = iota
	// Reset closes the connection (RST) before any answer.
	Reset
	// Unavailable answers 503 with a Retry-After (Options.RetryAfter).
	Unavailable
	// TooMany answers 429 with a Retry-After.
	TooMany
)

// AllFaults are the faults a Hub picks from by default.
var AllFaults = []Fault{Cut, Reset, Unavailable, TooMany}

func (f Fault) String() string {
	return [...]string{"cut", "reset", "503", "429"}[f]
}

// Options configure a Hub; the zero value serves nothing.
type Options struct {
	// Dir holds the files: /{prefix}/resolve/{rev}/{path} is Dir/{prefix}/{path}.
	Dir string
	// Large is the size from which a file is redirected to the CDN
	// (default 1 MiB; the Hub's LFS files).
	Large int64
	// Expiry is how long a signed CDN URL is good for (default 10 min).
	Expiry time.Duration
	// FaultRate is the fraction of requests faulted (0: the default, 1 in 5;
	// negative: none).
	FaultRate float64
	// Faults are those picked from, evenly (default AllFaults).
	Faults []Fault
	// Seed makes the faults reproducible.
	Seed uint64
	// RetryAfter is what 503 and 429 answers say (default 1 s; whole
	// seconds).
	RetryAfter time.Duration
	// Token, when set, is the bearer token the resolve origin requires
	// (401 otherwise); the CDN counts every Authorization it receives as a
	// leak (Stats.Leaks).
	Token string
}

// Stats counts what a Hub answered.
type Stats struct {
	Requests  int           // on both origins, preflights excluded
	Faults    map[Fault]int // faulted requests, by fault
	Redirects int           // 302s to the CDN
	Expired   int           // CDN requests refused for an expired signature
	Leaks     int           // CDN requests that carried an Authorization header
	Missing   int           // 404s
}

// Hub is a running Hub-like server.
type Hub struct {
	URL    string // the resolve origin, e.g. http://127.0.0.1:41234
	CDNURL string // the CDN origin

	opt      Options
	key      []byte
	resolve  *httptest.Server
	cdn      *httptest.Server
	mu       sync.Mutex
	rnd      *rand.Rand
	st       Stats
	faultsOn bool
}

// NewHub starts a Hub on two loopback listeners.
func NewHub(opt Options) *Hub {
	if opt.Large <= 0 {
		opt.Large = 1 << 20
	}
	if opt.Expiry <= 0 {
		opt.Expiry = 10 * time.Minute
	}
	switch {
	case opt.FaultRate == 0:
		opt.FaultRate = 0.2
	case opt.FaultRate < 0:
		opt.FaultRate = 0
	}
	if len(opt.Faults) == 0 {
		opt.Faults = AllFaults
	}
	if opt.RetryAfter <= 0 {
		opt.RetryAfter = time.Second
	}
	h := &Hub{opt: opt, key: []byte(fmt.Sprintf("hub-%d", opt.Seed)), rnd: rand.New(rand.NewPCG(opt.Seed, 0x5eed)),
		st: Stats{Faults: map[Fault]int{}}, faultsOn: true}
	h.resolve = httptest.NewServer(http.HandlerFunc(h.serveResolve))
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.URL, h.CDNURL = h.resolve.URL, h.cdn.URL
	return h
}

// Close stops both listeners.
func (h *Hub) Close() {
	h.resolve.CloseClientConnections()
	h.cdn.CloseClientConnections()
	h.resolve.Close()
	h.cdn.Close()
}

// Base is the resolve URL of folder prefix at revision main, with a
// trailing slash: what source.NewHTTP takes.
func (h *Hub) Base(prefix string) string {
	return h.URL + "/" + strings.Trim(prefix, "/") + "/resolve/main/"
}

// SetFaults turns the faults on or off (they start on).
func (h *Hub) SetFaults(on bool) {
	h.mu.Lock()
	h.faultsOn = on
	h.mu.Unlock()
}

// Stats is a copy of the counts so far.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.st
	s.Faults = map[Fault]int{}
	for k, v := range h.st.Faults {
		s.Faults[k] = v
	}
	return s
}

// Faulted is the number of faulted requests.
func (s Stats) Faulted() int {
	n := 0
	for _, v := range s.Faults {
		n += v
	}
	return n
}

func (s Stats) String() string {
	var f []string
	for _, k := range AllFaults {
		if s.Faults[k] > 0 {
			f = append(f, fmt.Sprintf("%d %s", s.Faults[k], k))
		}
	}
	return fmt.Sprintf("%d requests, %d faulted (%s), %d redirects, %d expired, %d missing, %d token leaks",
		s.Requests, s.Faulted(), strings.Join(f, ", "), s.Redirects, s.Expired, s.Missing, s.Leaks)
}

// count records a request and decides its fault (ok false: none).
func (h *Hub) count(r *http.Request, update func(*Stats)) (Fault, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.st.Requests++
	if update != nil {
		update(&h.st)
	}
	if !h.faultsOn || h.opt.FaultRate <= 0 || h.rnd.Float64() >= h.opt.FaultRate {
		return 0, false
	}
	f := h.opt.Faults[h.rnd.IntN(len(h.opt.Faults))]
	h.st.Faults[f]++
	return f, true
}

func cors(w http.ResponseWriter) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "Content-Range, Content-Length, Accept-Ranges, Retry-After, X-Repo-Commit, X-Linked-Size, X-Linked-Etag, X-Error-Code")
}

// preflight answers an OPTIONS request; true if it was one.
func preflight(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodOptions {
		return false
	}
	cors(w)
	w.Header().Set("Access-Control-Allow-Headers", "Range, Authorization")
	w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD")
	w.WriteHeader(http.StatusNoContent)
	return true
}

// file is the local path of a resolve path ("" if it is not one).
func (h *Hub) file(p string) (rel, local string) {
	before, after, ok := strings.Cut(p, "/resolve/")
	if !ok {
		return "", ""
	}
	_, name, ok := strings.Cut(after, "/") // drop the revision
	if !ok || name == "" {
		return "", ""
	}
	rel = path.Clean(path.Join(strings.Trim(before, "/"), name))
	if strings.HasPrefix(rel, "..") {
		return "", ""
	}
	return rel, filepath.Join(h.opt.Dir, filepath.FromSlash(rel))
}

func (h *Hub) serveResolve(w http.ResponseWriter, r *http.Request) {
	if preflight(w, r) {
		return
	}
	rel, local := h.file(r.URL.Path)
	st, err := os.Stat(local)
	large := err == nil && st.Mode().IsRegular() && st.Size() >= h.opt.Large
	f, faulted := h.count(r, func(s *Stats) {
		if local == "" || err != nil || !st.Mode().IsRegular() {
			s.Missing++
		} else if large {
			s.Redirects++
		}
	})
	if faulted {
		h.fault(w, r, f, local)
		return
	}
	cors(w)
	w.Header().Set("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
	if h.opt.Token != "" && r.Header.Get("Authorization") != "Bearer "+h.opt.Token {
		w.Header().Set("X-Error-Code", "RepoNotFound")
		http.Error(w, "Repository not found", http.StatusUnauthorized)
		return
	}
	if local == "" || err != nil || !st.Mode().IsRegular() {
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "Entry not found", http.StatusNotFound)
		return
	}
	if large {
		exp := time.Now().Add(h.opt.Expiry).Unix()
		w.Header().Set("X-Linked-Size", strconv.FormatInt(st.Size(), 10))
		w.Header().Set("Location", fmt.Sprintf("%s/blob/%s?expires=%d&sig=%s", h.CDNURL, rel, exp, h.sign(rel, exp)))
		w.WriteHeader(http.StatusFound)
		return
	}
	serveRange(w, r, local, st.Size())
}

func (h *Hub) sign(rel string, exp int64) string {
	m := hmac.New(sha256.New, h.key)
	fmt.Fprintf(m, "%s\n%d", rel, exp)
	return hex.EncodeToString(m.Sum(nil))
}

func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request) {
	if preflight(w, r) {
		return
	}
	rel := strings.TrimPrefix(r.URL.Path, "/blob/")
	exp, _ := strconv.ParseInt(r.URL.Query().Get("expires"), 10, 64)
	good := hmac.Equal([]byte(r.URL.Query().Get("sig")), []byte(h.sign(rel, exp)))
	expired := good && time.Now().Unix() >= exp
	f, faulted := h.count(r, func(s *Stats) {
		if r.Header.Get("Authorization") != "" {
			s.Leaks++
		}
		if expired {
			s.Expired++
		}
	})
	local := filepath.Join(h.opt.Dir, filepath.FromSlash(rel))
	if faulted {
		h.fault(w, r, f, local)
		return
	}
	cors(w)
	if !good || expired {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, "<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>")
		return
	}
	st, err := os.Stat(local)
	if err != nil || !st.Mode().IsRegular() {
		http.Error(w, "no such blob", http.StatusNotFound)
		return
	}
	serveRange(w, r, local, st.Size())
}

// parseRange reads a single "bytes=a-b" (or "a-") within size.
func parseRange(v string, size int64) (start, end int64, ok bool) {
	spec, found := strings.CutPrefix(v, "bytes=")
	a, b, dash := strings.Cut(spec, "-")
	if !found || !dash || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 || start >= size {
		return 0, 0, false
	}
	end = size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
			return 0, 0, false
		}
		end = min(end, size-1)
	}
	return start, end, true
}

// serveRange answers a GET of the file at local: 206 for one range, 416
// (with */size) for a range outside it, 200 without Range.
func serveRange(w http.ResponseWriter, r *http.Request, local string, size int64) {
	f, err := os.Open(local)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Type", "application/octet-stream")
	start, end := int64(0), size-1
	if v := r.Header.Get("Range"); v != "" {
		var ok bool
		if start, end, ok = parseRange(v, size); !ok {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, size))
		w.Header().Set("Content-Length", strconv.FormatInt(end-start+1, 10))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	}
	if r.Method == http.MethodHead || size == 0 {
		return
	}
	buf := make([]byte, min(end-start+1, 1<<20))
	for off := start; off <= end; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), end-off+1)], off)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			off += int64(n)
		}
		if err != nil && off <= end {
			return
		}
	}
}

// fault answers r with the fault f.
func (h *Hub) fault(w http.ResponseWriter, r *http.Request, f Fault, local string) {
	switch f {
	case Unavailable, TooMany:
		cors(w)
		w.Header().Set("Retry-After", strconv.Itoa(int(h.opt.RetryAfter/time.Second)))
		code := http.StatusServiceUnavailable
		if f == TooMany {
			code = http.StatusTooManyRequests
		}
		http.Error(w, http.StatusText(code), code)
		return
	case Reset:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // RST, not FIN
		}
		conn.Close()
		return
	}
	// Cut: the whole answer's headers and half its body, then close.
	st, err := os.Stat(local)
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	start, end, ok := parseRange(r.Header.Get("Range"), st.Size())
	if !ok {
		start, end = 0, st.Size()-1
	}
	cors(w)
	w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, st.Size()))
	w.Header().Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusPartialContent)
	half := (end - start + 1) / 2
	if fh, err := os.Open(local); err == nil {
		buf := make([]byte, min(half, 1<<20))
		for off := start; off < start+half; {
			n, _ := fh.ReadAt(buf[:min(int64(len(buf)), start+half-off)], off)
			if n <= 0 {
				break
			}
			if _, err := w.Write(buf[:n]); err != nil {
				break
			}
			off += int64(n)
		}
		fh.Close()
	}
	w.(http.Flusher).Flush()
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}
