package decision

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var testReq = Request{ID: "arc-mini/q01", Prompt: "Which?", Options: []string{"A", "B", "C", "D"}}

func goodBody(id string, opts []string) string {
	r := Response{ID: id, Model: "clef", Choice: opts[1], Options: opts, Logits: []float64{0, 2, -1, 0.5}, Probs: []float64{0.09, 0.67, 0.03, 0.21}}
	b, _ := json.Marshal(r)
	return string(b)
}

// faultServer is a loopback server whose behaviour each test sets.
func faultServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func fastClient(url string) *Client {
	return &Client{BaseURL: url, Timeout: 2 * time.Second, Backoff: 5 * time.Millisecond, MaxRetryAfter: 50 * time.Millisecond, MaxResponse: 1 << 20}
}

func decide(t *testing.T, c *Client) (*Response, *Error) {
	t.Helper()
	r := testReq
	resp, err := c.Decide(context.Background(), &r)
	if err == nil {
		return resp, nil
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error of type %T: %v", err, err)
	}
	return resp, e
}

func TestClientAgainstFaults(t *testing.T) {
	cases := []struct {
		name     string
		handler  func(calls *atomic.Int32) http.HandlerFunc
		kind     string // "" = success
		msg      string
		attempts int32 // server calls expected
	}{
		{"good", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, goodBody(testReq.ID, testReq.Options))
			}
		}, "", "", 1},
		{"no headers ever", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				// The server notices a closed connection only once the
				// body is read.
				io.Copy(io.Discard, r.Body)
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}
		}, "timeout", "deadline", 0},
		{"trickling body", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(200)
				for i := 0; i < 1000; i++ {
					if _, err := w.Write([]byte(" ")); err != nil {
						return
					}
					w.(http.Flusher).Flush()
					select {
					case <-r.Context().Done():
						return
					case <-time.After(100 * time.Millisecond):
					}
				}
			}
		}, "timeout", "", 0},
		{"endless body", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				chunk := bytes.Repeat([]byte("[1,"), 1<<14)
				for r.Context().Err() == nil {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}
		}, "protocol", "over 1048576 bytes", 1},
		{"gzip bomb", func(*atomic.Int32) http.HandlerFunc {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			zw.Write(bytes.Repeat([]byte(" "), 64<<20))
			zw.Close()
			bomb := buf.Bytes()
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "gzip")
				w.Write(bomb)
			}
		}, "protocol", "over 1048576 bytes", 1},
		{"HTML error page", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				fmt.Fprint(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
			}
		}, "status", "HTML page", 1},
		{"HTML with 200", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, "<html>login</html>")
			}
		}, "protocol", "not JSON", 1},
		{"malformed JSON", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"id": "arc-mini/q01", "choice": `)
			}
		}, "protocol", "malformed", 1},
		{"duplicate keys", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				b := goodBody(testReq.ID, testReq.Options)
				fmt.Fprint(w, strings.Replace(b, `"choice":"B"`, `"choice":"B","choice":"A"`, 1))
			}
		}, "protocol", `duplicate key "choice"`, 1},
		{"trailing data", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, goodBody(testReq.ID, testReq.Options)+`{"id":"x"}`)
			}
		}, "protocol", "trailing data", 1},
		{"wrong schema", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, strings.Replace(goodBody(testReq.ID, testReq.Options), `"logits":[0,2,-1,0.5]`, `"logits":"high"`, 1))
			}
		}, "protocol", "malformed decision", 1},
		{"wrong id", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, goodBody("arc-mini/q02", testReq.Options))
			}
		}, "protocol", "does not echo the request's", 1},
		{"wrong options", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, goodBody(testReq.ID, []string{"A", "B", "D", "C"}))
			}
		}, "protocol", "options", 1},
		{"429 then success, Retry-After honoured", func(calls *atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if calls.Load() < 3 {
					w.Header().Set("Retry-After", "3600") // capped by MaxRetryAfter
					w.WriteHeader(429)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, goodBody(testReq.ID, testReq.Options))
			}
		}, "", "", 3},
		{"503 forever", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(503)
				fmt.Fprint(w, `{"error":{"message":"busy","type":"overloaded"}}`)
			}
		}, "status", "overloaded: busy", 4},
		{"500 is not retried", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(500)
				fmt.Fprint(w, `{"error":{"message":"boom","type":"server_error"}}`)
			}
		}, "status", "server_error: boom", 1},
		{"400 is not retried", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(400)
				fmt.Fprint(w, `{"error":{"message":"bad","type":"invalid_request"}}`)
			}
		}, "status", "invalid_request", 1},
		{"401 hint", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }
		}, "status", "wants a bearer token", 1},
		{"connection reset, then success", func(calls *atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if calls.Load() == 1 {
					conn, _, err := w.(http.Hijacker).Hijack()
					if err == nil {
						conn.(*net.TCPConn).SetLinger(0) // RST
						conn.Close()
					}
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, goodBody(testReq.ID, testReq.Options))
			}
		}, "", "", 2},
		{"connection reset always", func(*atomic.Int32) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.(*net.TCPConn).SetLinger(0)
					conn.Close()
				}
			}
		}, "network", "", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			h := c.handler(&calls)
			s := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				io.Copy(io.Discard, r.Body)
				h(w, r)
			})
			start := time.Now()
			resp, err := decide(t, fastClient(s.URL))
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v: the deadline did not hold", took)
			}
			if c.kind == "" {
				if err != nil {
					t.Fatalf("failed: %v", err)
				}
				if resp.Choice != "B" {
					t.Errorf("choice %q", resp.Choice)
				}
			} else {
				if err == nil {
					t.Fatalf("accepted: %+v", resp)
				}
				if err.Kind != c.kind || !strings.Contains(err.Error(), c.msg) {
					t.Errorf("error %s %q, want %s containing %q", err.Kind, err.Error(), c.kind, c.msg)
				}
			}
			if c.attempts > 0 && calls.Load() != c.attempts {
				t.Errorf("server called %d times, want %d", calls.Load(), c.attempts)
			}
		})
	}
}

func TestClientRejectsBadURLAndRequest(t *testing.T) {
	for _, u := range []string{"javascript:alert(1)", "file:///etc/passwd", "ftp://x", "not a url"} {
		if _, err := (&Client{BaseURL: u}).Endpoint(); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	if u, _ := (&Client{BaseURL: "http://h:1/base/"}).Endpoint(); u != "http://h:1/base/v1/systemone" {
		t.Errorf("endpoint %s", u)
	}
	c := fastClient("http://127.0.0.1:1")
	if _, err := c.Decide(context.Background(), &Request{ID: "x", Options: []string{"A", "A"}}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate option: %v", err)
	}
}

func TestCheckDuplicateKeys(t *testing.T) {
	for s, dup := range map[string]bool{
		`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`: false,
		`{"a":1,"a":2}`:                   true,
		`{"a":{"x":1,"x":2}}`:             true,
		`[{"a":1,"b":[1,2],"a":3}]`:       true,
		`{"a":[{"b":1}],"c":"a","d":"a"}`: false,
	} {
		if err := checkDuplicateKeys([]byte(s)); (err != nil) != dup {
			t.Errorf("%s: %v", s, err)
		}
	}
}
