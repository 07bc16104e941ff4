package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
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
