//go:build !wasm

package main

// The servers an operator deploys (decisiond, serve, proxy), attacked:
// each test is named after what it tries, against real loopback servers.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/service"
)

// recorder is an upstream that records the requests that reached it.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (rc *recorder) server(t *testing.T) *url.URL {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.seen = append(rc.seen, r.Method+" "+r.URL.RequestURI())
		rc.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*") // the proxy must drop it
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	}))
	t.Cleanup(hs.Close)
	u, _ := url.Parse(hs.URL)
	return u
}

func (rc *recorder) got() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.seen...)
}

// send makes a raw request (the path as given, not cleaned by a client).
func send(t *testing.T, method, target, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// TestProxyAnswersNoCORSWithoutOrigins: with no --allow-origin the proxy
// gives no page on another origin access: preflights and requests that
// carry an Origin are refused, with no Access-Control-Allow-Origin (and
// the upstream's own is dropped); a client that is not a browser still
// gets through.
func TestProxyAnswersNoCORSWithoutOrigins(t *testing.T) {
	var rc recorder
	ps := httptest.NewServer(newProxy(rc.server(t), nil, proxyTimeouts{}))
	defer ps.Close()
	for _, r := range []*http.Response{
		send(t, "OPTIONS", ps.URL+service.Path, "", "Origin", "https://page.example", "Access-Control-Request-Method", "POST"),
		send(t, "GET", ps.URL+"/health", "", "Origin", "https://page.example"),
		send(t, "POST", ps.URL+service.Path, "{}", "Origin", "null", "Content-Type", "application/json"),
	} {
		if r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s %s from an origin: %d, ACAO %q", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
		}
	}
	r := send(t, "GET", ps.URL+"/health", "")
	if r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET /health without an Origin: %d, ACAO %q (the upstream's must be dropped)", r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"))
	}
	if got := rc.got(); len(got) != 1 || got[0] != "GET /health" {
		t.Errorf("the upstream saw %q", got)
	}
}

// TestProxyRefusesNullOrigin: "*" allows any origin but "null" (a
// sandboxed frame or a file: page), and names the origin, never "*".
func TestProxyRefusesNullOrigin(t *testing.T) {
	var rc recorder
	ps := httptest.NewServer(newProxy(rc.server(t), []string{"*"}, proxyTimeouts{}))
	defer ps.Close()
	pre := func(origin string) *http.Response {
		return send(t, "OPTIONS", ps.URL+service.Path, "", "Origin", origin, "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type")
	}
	if r := pre("null"); r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from null: %d %v", r.StatusCode, r.Header)
	}
	if r := pre("https://page.example"); r.StatusCode != 204 || r.Header.Get("Access-Control-Allow-Origin") != "https://page.example" {
		t.Errorf("preflight from an origin under *: %d %v", r.StatusCode, r.Header)
	}
	if got := rc.got(); len(got) != 0 {
		t.Errorf("preflights were forwarded: %q", got)
	}
}

// TestProxyForwardsOnlyTheDecisionAPI: other paths, other methods, dot
// segments (plain or encoded), double slashes and preflights without an
// origin never reach the server; a query is dropped.
func TestProxyForwardsOnlyTheDecisionAPI(t *testing.T) {
	var rc recorder
	ps := httptest.NewServer(newProxy(rc.server(t), []string{"https://page.example"}, proxyTimeouts{}))
	defer ps.Close()
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/", 404},
		{"GET", "/admin", 404},
		{"GET", "/v1/models", 404},
		{"GET", "/v1/systemone/../../admin", 400},
		{"GET", "/health/../admin", 400},
		{"GET", "/v1/%2e%2e/admin", 400},
		{"GET", "/v1/%2E%2E/health", 400},
		{"GET", "//health", 400},
		{"GET", "/health/", 400},
		{"GET", service.Path, 405},
		{"PUT", service.Path, 405},
		{"DELETE", "/health", 405},
		{"POST", "/health", 405},
		{"OPTIONS", service.Path, 405},
		{"TRACE", "/health", 405},
	} {
		if r := send(t, c.method, ps.URL+c.path, ""); r.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, r.StatusCode, c.status)
		}
	}
	// A preflight without an Origin is not a preflight: refused, not forwarded.
	if r := send(t, "OPTIONS", ps.URL+service.Path, "", "Access-Control-Request-Method", "POST"); r.StatusCode != 403 {
		t.Errorf("OPTIONS without an Origin: %d", r.StatusCode)
	}
	send(t, "GET", ps.URL+"/health?x=../../etc", "")
	send(t, "POST", ps.URL+service.Path+"?debug=1", "{}", "Content-Type", "application/json")
	if got := rc.got(); strings.Join(got, ",") != "GET /health,POST /v1/systemone" {
		t.Errorf("the upstream saw %q, want only GET /health and POST /v1/systemone, without queries", got)
	}
}

// TestProxyRefusesCrossOriginSimplePost: a page on an origin not allowed
// can send a "simple" POST (text/plain, no preflight); the proxy refuses
// it before it reaches the server.
func TestProxyRefusesCrossOriginSimplePost(t *testing.T) {
	var rc recorder
	ps := httptest.NewServer(newProxy(rc.server(t), []string{"https://page.example"}, proxyTimeouts{}))
	defer ps.Close()
	for _, origin := range []string{"https://evil.example", "null", "https://page.example.evil.example"} {
		if r := send(t, "POST", ps.URL+service.Path, `{"id":"a","prompt":"p","options":["A","B"]}`, "Origin", origin, "Content-Type", "text/plain"); r.StatusCode != 403 {
			t.Errorf("simple POST from %s: %d", origin, r.StatusCode)
		}
	}
	if got := rc.got(); len(got) != 0 {
		t.Errorf("the upstream saw %q", got)
	}
	if r := send(t, "POST", ps.URL+service.Path, `{}`, "Origin", "https://page.example", "Content-Type", "application/json"); r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "https://page.example" {
		t.Errorf("POST from the allowed origin: %d %v", r.StatusCode, r.Header)
	}
}

// TestProxyRefusesWebSocketUpgrade: an upgrade would turn the proxy into a
// tunnel to the server; it is refused.
func TestProxyRefusesWebSocketUpgrade(t *testing.T) {
	var rc recorder
	ps := httptest.NewServer(newProxy(rc.server(t), []string{"*"}, proxyTimeouts{}))
	defer ps.Close()
	for _, hdr := range [][]string{
		{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
		{"Connection", "keep-alive, upgrade", "Upgrade", "h2c"},
		{"Upgrade", "websocket"},
	} {
		if r := send(t, "GET", ps.URL+"/health", "", hdr...); r.StatusCode != 400 {
			t.Errorf("upgrade %v: %d", hdr, r.StatusCode)
		}
	}
	if got := rc.got(); len(got) != 0 {
		t.Errorf("the upstream saw %q", got)
	}
}

// TestProxyUpstreamTimeouts: a server that accepts and never answers, or
// answers its headers and then stalls, does not hold the proxy's
// requests: 504 once the response-header timeout passes, and a body cut at
// the total timeout.
func TestProxyUpstreamTimeouts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	stall := make(chan struct{})
	defer close(stall)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				if req.URL.Path == "/health" { // headers, then nothing
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
				}
				<-stall
			}()
		}
	}()
	u, _ := url.Parse("http://" + ln.Addr().String())
	ps := httptest.NewServer(newProxy(u, nil, proxyTimeouts{Header: 300 * time.Millisecond, Total: time.Second}))
	defer ps.Close()
	start := time.Now()
	r := send(t, "POST", ps.URL+service.Path, "{}", "Content-Type", "application/json")
	if d := time.Since(start); r.StatusCode != 504 || d > 3*time.Second {
		t.Errorf("a server that never answers: %d after %v, want 504 after about 300 ms", r.StatusCode, d)
	}
	start = time.Now()
	resp, err := http.Get(ps.URL + "/health")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if d := time.Since(start); err == nil || d > 4*time.Second {
		t.Errorf("a server that stalls its body: %v after %v, want the body cut after about 1 s", err, d)
	}
}

// fakeWeb is a --web folder: an app.wasm, an asset and a subfolder.
func fakeWeb(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"app.wasm": "\x00asm", "clefcheck.css": "body{}", "sub/x.txt": "x"} {
		if err := writeFile(filepath.Join(dir, name), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var siteOnce struct {
	sync.Once
	h   http.Handler
	err error
}

// site is serve's handler over a fake web folder and the demo world (made
// once: go-app's routes are registered once per process).
func site(t *testing.T) *httptest.Server {
	t.Helper()
	siteOnce.Do(func() { siteOnce.h, siteOnce.err = newSiteHandler(fakeWeb(t), worldDir) })
	if siteOnce.err != nil {
		t.Fatal(siteOnce.err)
	}
	hs := httptest.NewServer(siteOnce.h)
	t.Cleanup(hs.Close)
	return hs
}

// TestServeListsNoDirectory: no folder of the site or of the demo world is
// listed (with or without its slash), its files are served.
func TestServeListsNoDirectory(t *testing.T) {
	hs := site(t)
	for _, p := range []string{"/web/", "/web/sub/", "/web/sub", "/demo/", "/demo/adapter/", "/demo/adapter", "/demo/reference/hidden/"} {
		if r := send(t, "GET", hs.URL+p, ""); r.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404 (no listing, no redirect to one)", p, r.StatusCode)
		}
	}
	for _, p := range []string{"/web/clefcheck.css", "/web/sub/x.txt", "/demo/world.json", "/demo/adapter/adapter_config.json"} {
		if r := send(t, "GET", hs.URL+p, ""); r.StatusCode != 200 {
			t.Errorf("GET %s: %d", p, r.StatusCode)
		}
	}
}

// TestServeFramesOnlyTheDemoPage: clickjacking — every answer forbids
// framing (X-Frame-Options and CSP frame-ancestors) except the embeddable
// Demo page, which any site may frame; every answer has nosniff and a
// referrer policy.
func TestServeFramesOnlyTheDemoPage(t *testing.T) {
	hs := site(t)
	for _, p := range []string{"/", "/decisions", "/hidden", "/web/clefcheck.css", "/demo/world.json", "/health", "/nope", "/embedded/../decisions"} {
		r := send(t, "GET", hs.URL+p, "")
		if r.Header.Get("X-Frame-Options") != "DENY" || r.Header.Get("Content-Security-Policy") != "frame-ancestors 'none'" {
			t.Errorf("GET %s may be framed: %v", p, r.Header)
		}
	}
	for _, p := range []string{"/embed", "/embed?prompt=x&options=A,B"} {
		r := send(t, "GET", hs.URL+p, "")
		if r.StatusCode != 200 || r.Header.Get("X-Frame-Options") != "" || r.Header.Get("Content-Security-Policy") != "frame-ancestors *" {
			t.Errorf("GET %s cannot be framed: %d %v", p, r.StatusCode, r.Header)
		}
	}
	for _, p := range []string{"/", "/embed", "/web/clefcheck.css", service.Path} {
		r := send(t, "GET", hs.URL+p, "")
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "strict-origin-when-cross-origin" {
			t.Errorf("GET %s: nosniff %q, referrer policy %q", p, r.Header.Get("X-Content-Type-Options"), r.Header.Get("Referrer-Policy"))
		}
	}
}

// TestSIGTERMDrainsInFlightRequests: decisiond, the proxy and serve, run
// as the built binary, get SIGTERM while decisions are under way: every
// request completes with 200 and the process exits 0 (before, SIGTERM
// killed it at once: EOFs and resets).
func TestSIGTERMDrainsInFlightRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "clefcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("decisiond", func(t *testing.T) {
		d := start(t, bin, "decisiond", "--world", worldDir, "--addr", "127.0.0.1:0", "--max-in-flight", "4")
		drain(t, d, d.url)
	})
	t.Run("proxy", func(t *testing.T) {
		d := start(t, bin, "decisiond", "--world", worldDir, "--addr", "127.0.0.1:0", "--max-in-flight", "4")
		p := start(t, bin, "proxy", "--to", d.url, "--addr", "127.0.0.1:0")
		drain(t, p, p.url)
		d.stop(t)
	})
	t.Run("serve", func(t *testing.T) {
		s := start(t, bin, "serve", "--web", fakeWeb(t), "--world", worldDir, "--addr", "127.0.0.1:0")
		drain(t, s, s.url)
	})
}

// proc is a clefcheck server run as a subprocess.
type proc struct {
	cmd  *exec.Cmd
	url  string
	exit chan error
	log  *strings.Builder
	mu   *sync.Mutex
}

// start runs the binary and waits until it says where it listens.
func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), exit: make(chan error, 1), log: &strings.Builder{}, mu: &sync.Mutex{}}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = writerFunc(func(b []byte) (int, error) { p.mu.Lock(); defer p.mu.Unlock(); return p.log.Write(b) })
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u := re.FindString(sc.Text()); u != "" {
				select {
				case urls <- u:
				default:
				}
			}
		}
		p.exit <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
		}
	})
	select {
	case p.url = <-urls:
	case err := <-p.exit:
		t.Fatalf("clefcheck %s exited: %v\n%s", args[0], err, p.stderr())
	case <-time.After(time.Minute):
		t.Fatalf("clefcheck %s did not say where it listens:\n%s", args[0], p.stderr())
	}
	return p
}

func (p *proc) stderr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.log.String() }

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exit:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, p.stderr())
		}
	case <-time.After(15 * time.Second):
		t.Errorf("still running 15 s after SIGTERM")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// drain sends decisions to base, signals p with SIGTERM while they are
// under way, and checks that every one completes with a decision.
func drain(t *testing.T, p *proc, base string) {
	t.Helper()
	const n = 12
	body := `{"id":"q","prompt":"Which planet is closest to the Sun?","options":["A","B","C","D"]}`
	type result struct {
		status int
		err    error
		at     time.Time
	}
	res := make(chan result, n)
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxConnsPerHost: n, MaxIdleConnsPerHost: n}}
	for i := 0; i < n; i++ {
		go func() {
			resp, err := client.Post(base+service.Path, "application/json", strings.NewReader(body))
			if err != nil {
				res <- result{err: err, at: time.Now()}
				return
			}
			defer resp.Body.Close()
			var d struct{ Choice string }
			err = json.NewDecoder(resp.Body).Decode(&d)
			if err == nil && d.Choice == "" {
				err = fmt.Errorf("no choice")
			}
			res <- result{status: resp.StatusCode, err: err, at: time.Now()}
		}()
	}
	// Signal once the server is busy (its first answers are coming).
	first := <-res
	signalled := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	after := 0
	for i, r := range append([]result{first}, collect(res, n-1)...) {
		if r.err != nil || r.status != 200 {
			t.Errorf("request %d: status %d, %v", i, r.status, r.err)
		}
		if r.at.After(signalled) {
			after++
		}
	}
	if after == 0 {
		t.Errorf("no request was still under way at SIGTERM: the test proves nothing")
	}
	t.Logf("%d of %d requests completed after SIGTERM", after, n)
	select {
	case err := <-p.exit:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, p.stderr())
		}
	case <-time.After(15 * time.Second):
		t.Errorf("still running 15 s after SIGTERM")
	}
	// Gone: a new request is refused.
	if _, err := client.Post(base+service.Path, "application/json", strings.NewReader(body)); err == nil {
		t.Error("a request after the drain was answered")
	}
}

func collect[T any](c chan T, n int) []T {
	out := make([]T, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, <-c)
	}
	return out
}
