package hubtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Fault is one way a request for bytes fails.
type Fault int

const (
	// Cut sends the headers and half the body, then closes the connection.
	Cut Fault = iota
	// Reset closes the connection (RST) before any answer.
	Reset
	// Unavailable answers 503 with a Retry-After (Hub.RetryAfter).
	Unavailable
	// TooMany answers 429 with a Retry-After.
	TooMany
)

// AllFaults are the faults picked from when Hub.Faults is empty.
var AllFaults = []Fault{Cut, Reset, Unavailable, TooMany}

func (f Fault) String() string {
	return [...]string{"cut", "reset", "503", "429"}[f]
}

// Stats counts what the simulator answered on /resolve/ and the CDN (the
// API's JSON is not counted, nor faulted).
type Stats struct {
	Requests  int           // /resolve/ and CDN requests, preflights excluded
	Faults    map[Fault]int // faulted requests, by fault
	Redirects int           // 302s to the CDN
	Expired   int           // CDN requests refused for an expired signature
	Leaks     int           // CDN requests that carried an Authorization header
	Missing   int           // 404s at /resolve/
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

// SetFaults turns the faults off (and on again); they are on while
// FaultRate is positive.
func (h *Hub) SetFaults(on bool) {
	h.mu.Lock()
	h.faultsOff = !on
	h.mu.Unlock()
}

// count records a request for bytes and decides its fault (ok false:
// none).
func (h *Hub) count(update func(*Stats)) (Fault, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.st.Requests++
	if h.st.Faults == nil {
		h.st.Faults = map[Fault]int{}
	}
	if update != nil {
		update(&h.st)
	}
	if h.faultsOff || h.FaultRate <= 0 {
		return 0, false
	}
	if h.rnd == nil {
		h.rnd = rand.New(rand.NewPCG(h.Seed, 0x5eed))
	}
	if h.rnd.Float64() >= h.FaultRate {
		return 0, false
	}
	faults := h.Faults
	if len(faults) == 0 {
		faults = AllFaults
	}
	f := faults[h.rnd.IntN(len(faults))]
	h.st.Faults[f]++
	return f, true
}

// fault answers r with the fault f; local is the file asked for ("" if
// none), whose bytes a cut answer starts to send.
func (h *Hub) fault(w http.ResponseWriter, r *http.Request, f Fault, local string) {
	switch f {
	case Unavailable, TooMany:
		ra := h.RetryAfter
		if ra <= 0 {
			ra = time.Second
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(ra/time.Second)))
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
	if local == "" || err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	start, end, ok := parseRange(r.Header.Get("Range"), st.Size())
	if !ok {
		start, end = 0, st.Size()-1
	}
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
