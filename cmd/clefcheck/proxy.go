package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/service"
)

// ProxyCommand forwards the decision API to a decision server and answers
// CORS for the origins it is given.
type ProxyCommand struct{ stdout, stderr io.Writer }

func (c *ProxyCommand) Usage() string {
	return `Usage: clefcheck proxy --to URL --allow-origin ORIGIN... [flags]

A local reverse proxy for the decision API, so that a clefcheck page on
another origin can reach a decision server that does not answer CORS
itself: it answers CORS (preflights included) for the origins given with
--allow-origin, and refuses requests from any other origin. Only the
decision API is forwarded: POST /v1/systemone and GET /health (and their
preflights); any other path or method is refused, as are WebSocket
upgrades. The Authorization header is passed through. Point the page at
the proxy's URL. Stops gracefully on Ctrl-C or SIGTERM.

Without --allow-origin the proxy answers no CORS at all (a page on another
origin cannot use it): give the page's origin, e.g.
--allow-origin https://kvit-s-clefcheck.static.hf.space ("*" for any
origin but "null").
`
}

func (c *ProxyCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("proxy", c.Usage)
	to := fs.String("to", "", "the decision server's `URL` (e.g. http://gpu-box:8000)")
	addr := fs.String("addr", "127.0.0.1:8091", "listen address `HOST:PORT`")
	timeout := fs.Duration("timeout", 2*time.Minute, "bound on one request to the server, e.g. 90s")
	var origins multiFlag
	fs.Var(&origins, "allow-origin", "`ORIGIN` allowed to call")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	u, err := url.Parse(*to)
	if *to == "" || len(pos) > 0 || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &UsageError{Msg: "need --to http(s)://HOST[:PORT] of the decision server"}
	}
	if *timeout <= 0 {
		return &UsageError{Msg: "--timeout must be positive"}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	cors := "no CORS: give --allow-origin for a page on another origin"
	if len(origins) > 0 {
		cors = "CORS for " + strings.Join(origins, ", ")
	}
	fmt.Fprintf(c.stdout, "decision API proxy on http://%s → %s (%s)\n", ln.Addr(), u, cors)
	return serveUntil(ctx, ln, newProxy(u, origins, proxyTimeouts{Total: *timeout}))
}

// proxyTimeouts bound a forwarded request: connecting to the server, its
// response headers, and the whole exchange.
type proxyTimeouts struct{ Dial, Header, Total time.Duration }

func (t proxyTimeouts) orDefaults() proxyTimeouts {
	if t.Dial <= 0 {
		t.Dial = 10 * time.Second
	}
	if t.Total <= 0 {
		t.Total = 2 * time.Minute
	}
	if t.Header <= 0 || t.Header > t.Total {
		t.Header = t.Total
	}
	return t
}

// proxyRoutes are the decision API's paths and the methods forwarded on
// each (OPTIONS, the preflight, is answered by the proxy).
var proxyRoutes = map[string][]string{
	service.Path: {http.MethodPost},
	"/health":    {http.MethodGet, http.MethodHead},
}

func newProxy(u *url.URL, origins []string, t proxyTimeouts) http.Handler {
	t = t.orDefaults()
	rp := httputil.NewSingleHostReverseProxy(u)
	inner := rp.Director
	rp.Director = func(r *http.Request) {
		inner(r)
		r.Host = u.Host
		r.Header.Del("Origin") // the server need not know about the page
		r.Header.Del("Cookie")
	}
	rp.Transport = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: t.Dial, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   t.Dial,
		ResponseHeaderTimeout: t.Header,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   16,
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		// The proxy owns CORS; drop the server's own headers.
		for k := range resp.Header {
			if strings.HasPrefix(strings.ToLower(k), "access-control-") {
				resp.Header.Del(k)
			}
		}
		resp.Header.Del("Set-Cookie")
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		status := http.StatusBadGateway
		var ne net.Error
		if (errors.As(err, &ne) && ne.Timeout()) || errors.Is(r.Context().Err(), context.DeadlineExceeded) {
			status = http.StatusGatewayTimeout
		}
		service.WriteError(w, status, "proxy_error", "the decision server at %s did not answer: %v", u.Redacted(), err)
	}
	forward := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), t.Total)
		defer cancel()
		r = r.WithContext(ctx)
		r.Body = http.MaxBytesReader(w, r.Body, service.MaxBody)
		rp.ServeHTTP(w, r)
	})
	return guardAPI(origins, service.CORS(origins, forward))
}

// guardAPI lets through only the decision API's paths and methods (and
// preflights, which the CORS layer answers), refusing paths with dot
// segments and protocol upgrades; the query is dropped.
func guardAPI(origins []string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		p := r.URL.Path
		if strings.Contains(p, "..") || strings.Contains(strings.ToLower(r.URL.RawPath), "%2e") || path.Clean("/"+p) != p {
			service.WriteError(w, http.StatusBadRequest, "invalid_request", "the path must be clean (no dot segments, no double slashes)")
			return
		}
		if r.Header.Get("Upgrade") != "" || headerHas(r.Header, "Connection", "upgrade") {
			service.WriteError(w, http.StatusBadRequest, "invalid_request", "protocol upgrades (WebSocket) are not forwarded")
			return
		}
		methods, ok := proxyRoutes[p]
		if !ok {
			service.WriteError(w, http.StatusNotFound, "not_found", "only POST %s and GET /health are forwarded", service.Path)
			return
		}
		allowed := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		for _, m := range methods {
			allowed = allowed || r.Method == m
		}
		if !allowed {
			w.Header().Set("Allow", strings.Join(methods, ", "))
			service.WriteError(w, http.StatusMethodNotAllowed, "invalid_request", "%s is not forwarded on %s", r.Method, p)
			return
		}
		if r.Method == http.MethodOptions && (len(origins) == 0 || r.Header.Get("Origin") == "") {
			// A preflight is answered here or refused, never forwarded.
			service.WriteError(w, http.StatusForbidden, "forbidden_origin", "this proxy answers CORS only for the origins given with --allow-origin")
			return
		}
		r.URL.RawQuery = ""
		h.ServeHTTP(w, r)
	})
}

// headerHas tells whether the comma-separated header name lists token.
func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
