package service_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/demo"
	"github.com/kvit-s/clefcheck/wasm/model"
	"github.com/kvit-s/clefcheck/wasm/service"
	"github.com/kvit-s/clefcheck/wasm/world"
)

func demoServer(t *testing.T) (*service.Server, *httptest.Server) {
	t.Helper()
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	m, err := demo.LoadServer(dir, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := &service.Server{Model: m, Token: "sekret", AllowOrigins: []string{"https://kvit-s.hf.space"}, MaxInFlight: 1, QueueWait: 50 * time.Millisecond}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return srv, hs
}

func do(t *testing.T, method, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

func TestServer(t *testing.T) {
	_, hs := demoServer(t)
	url := hs.URL + decision.Path
	auth := map[string]string{"Authorization": "Bearer sekret", "Content-Type": "application/json"}

	// A real decision through the strict client, with hidden states.
	c := &decision.Client{BaseURL: hs.URL, Token: "sekret", Timeout: 10 * time.Second}
	resp, err := c.Decide(context.Background(), &decision.Request{ID: "x/1", Prompt: "Which planet is closest to the Sun?", Options: []string{"A", "B", "C", "D"}, ReturnHidden: true})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Hidden == nil || resp.Hidden.Shape[0] != 24 || resp.Hidden.Shape[1] != len(resp.InputIDs) || resp.TimingMS.Total <= 0 {
		t.Errorf("hidden %+v, %d ids, timing %v", resp.Hidden.Shape, len(resp.InputIDs), resp.TimingMS)
	}

	// Authentication.
	r, body := do(t, "POST", url, `{"id":"a","prompt":"p","options":["A","B"]}`, map[string]string{"Content-Type": "application/json"})
	if r.StatusCode != 401 || !strings.Contains(body, "authentication_error") || r.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("no token: %d %s", r.StatusCode, body)
	}
	// Bad requests are JSON errors.
	for _, b := range []string{`{`, `{"id":"","options":["A","B"]}`, `{"id":"a","options":["A"]}`, `{"id":"a","options":["A","A"]}`, `[1]`} {
		r, body := do(t, "POST", url, b, auth)
		var eb decision.ErrorBody
		if r.StatusCode != 400 || json.Unmarshal([]byte(body), &eb) != nil || eb.Error.Type != "invalid_request" {
			t.Errorf("%s: %d %s", b, r.StatusCode, body)
		}
	}
	r, _ = do(t, "POST", url, `{"id":"a","prompt":"`+strings.Repeat("x", decision.MaxBody)+`","options":["A","B"]}`, auth)
	if r.StatusCode != 413 {
		t.Errorf("oversized body: %d", r.StatusCode)
	}
	r, _ = do(t, "GET", url, "", auth)
	if r.StatusCode != 405 {
		t.Errorf("GET: %d", r.StatusCode)
	}
	// CORS: the preflight of a JSON POST with Authorization.
	r, _ = do(t, "OPTIONS", url, "", map[string]string{"Origin": "https://kvit-s.hf.space", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"})
	if r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "https://kvit-s.hf.space" || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", r.StatusCode, r.Header)
	}
	r, _ = do(t, "OPTIONS", url, "", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
	if r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin allowed: %v", r.Header)
	}
	r, body = do(t, "GET", hs.URL+"/health", "", nil)
	if r.StatusCode != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Errorf("health: %d %s", r.StatusCode, body)
	}
	// Bounded concurrency: with one slot and a short queue, a burst gets 503s with Retry-After.
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, _ := do(t, "POST", url, `{"id":"a","prompt":"`+strings.Repeat("long prompt ", 20)+`","options":["A","B"]}`, auth)
			mu.Lock()
			codes[r.StatusCode]++
			if r.StatusCode == 503 && r.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[200] == 0 || codes[503] == 0 {
		t.Errorf("burst: %v", codes)
	}
}
