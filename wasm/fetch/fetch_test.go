package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 0 ":                           0,
		"-3":                            0,
		"soon":                          0,
		"Sun, 29 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Sun, 29 Nov 2026 11:00:00 GMT": 0, // in the past
		"99999999999999999999":          0, // overflow refused
	} {
		if got := RetryAfter(v, now); got != want {
			t.Errorf("RetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestNetHTTPLimit: a body over the limit is cut at the limit and marked
// truncated (never read whole); headers come back in lower case; a
// deadline is reported as a timeout.
func TestNetHTTPLimit(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(300 * time.Millisecond)
		}
		w.Header().Set("X-Echo", r.Header.Get("X-Test")+"-"+r.Method)
		w.Write([]byte(strings.Repeat("x", 1000)))
	}))
	defer hs.Close()
	ctx := context.Background()
	resp, err := Default.Do(ctx, &Request{URL: hs.URL, Header: map[string]string{"X-Test": "hi"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Body) != 100 || !resp.Truncated || resp.Get("X-ECHO") != "hi-GET" || resp.Status != 200 {
		t.Errorf("got %d bytes, truncated %v, echo %q, status %d", len(resp.Body), resp.Truncated, resp.Get("x-echo"), resp.Status)
	}
	resp, err = Default.Do(ctx, &Request{Method: "POST", URL: hs.URL, Body: []byte("{}"), Limit: 1000})
	if err != nil || len(resp.Body) != 1000 || resp.Truncated || resp.Get("x-echo") != "-POST" {
		t.Errorf("exact limit: %v %d %v %q", err, len(resp.Body), resp.Truncated, resp.Get("x-echo"))
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := Default.Do(tctx, &Request{URL: hs.URL + "/slow"}); !IsTimeout(err) {
		t.Errorf("deadline: %v is not a timeout", err)
	}
	if _, err := (missing{}).Do(ctx, &Request{}); err == nil {
		t.Error("the missing transport did not fail")
	}
}

// TestNetHTTPInto: a body of known length that fits Into is read into it
// (no buffer of its own); one that does not fit, or of unknown length, is
// read as always; one cut short of its Content-Length is an error, as
// without Into.
func TestNetHTTPInto(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := strings.Repeat("y", 1000)
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte(body[:10]))
			w.(http.Flusher).Flush() // no Content-Length
			w.Write([]byte(body[10:]))
		case "/short":
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte(body[:600]))
			panic(http.ErrAbortHandler) // the connection is cut
		default:
			w.Header().Set("Content-Length", "1000")
			w.Write([]byte(body))
		}
	}))
	defer hs.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		path    string
		into    int
		aliased bool
	}{{"/", 1000, true}, {"/", 4096, true}, {"/", 999, false}, {"/chunked", 4096, false}} {
		into := make([]byte, tc.into)
		resp, err := Default.Do(ctx, &Request{URL: hs.URL + tc.path, Into: into})
		if err != nil || string(resp.Body) != strings.Repeat("y", 1000) {
			t.Fatalf("%s into %d: %v, %d bytes", tc.path, tc.into, err, len(resp.Body))
		}
		if got := &resp.Body[0] == &into[0]; got != tc.aliased {
			t.Errorf("%s into %d: read into Into %v, want %v", tc.path, tc.into, got, tc.aliased)
		}
	}
	if _, err := Default.Do(ctx, &Request{URL: hs.URL + "/short", Into: make([]byte, 1000)}); err == nil {
		t.Error("a body cut short of its Content-Length was taken")
	}
}

// TestRedirectToken: the default client sends Authorization after a
// redirect only to the origin the request was made to (net/http alone
// keeps it for the same host on another port, and for subdomains).
func TestRedirectToken(t *testing.T) {
	got := make(chan string, 4)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- "other:" + r.Header.Get("Authorization")
	}))
	defer other.Close()
	var self *httptest.Server
	self = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/here":
			http.Redirect(w, r, self.URL+"/end", http.StatusFound)
		default:
			got <- "self:" + r.Header.Get("Authorization")
		}
	}))
	defer self.Close()
	hdr := map[string]string{"Authorization": "Bearer tok"}
	for path, want := range map[string]string{"/away": "other:", "/here": "self:Bearer tok"} {
		if _, err := Default.Do(context.Background(), &Request{URL: self.URL + path, Header: hdr}); err != nil {
			t.Fatal(err)
		}
		if g := <-got; g != want {
			t.Errorf("%s: the redirect's target saw %q, want %q", path, g, want)
		}
	}
	u1, _ := url.Parse("https://huggingface.co/x")
	for s, same := range map[string]bool{"https://huggingface.co:443/y": true, "https://cdn-lfs.huggingface.co/y": false, "http://huggingface.co/y": false, "https://huggingface.co:8443/y": false} {
		u2, _ := url.Parse(s)
		if SameOrigin(u1, u2) != same {
			t.Errorf("SameOrigin(%s, %s) != %v", u1, u2, same)
		}
	}
}
