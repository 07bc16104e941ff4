package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/kvit-s/clefcheck/wasm/service"
)

// ProxyCommand forwards to a decision server and adds CORS.
type ProxyCommand struct{ stdout, stderr io.Writer }

func (c *ProxyCommand) Usage() string {
	return `Usage: clefcheck proxy --to URL [--addr HOST:PORT] [--allow-origin ORIGIN...]

A local reverse proxy that answers CORS (preflights included), so that the
hosted clefcheck page can reach a decision server that does not answer
CORS itself. Point the page at the proxy's URL. The Authorization header is
passed through.

Flags:
  --to URL               the decision server (e.g. http://gpu-box:8000)
  --addr HOST:PORT       listen address (default 127.0.0.1:8091)
  --allow-origin ORIGIN  origin allowed to call (repeatable; default *)
`
}

func (c *ProxyCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("proxy", c.Usage)
	to := fs.String("to", "", "")
	addr := fs.String("addr", "127.0.0.1:8091", "")
	var origins multiFlag
	fs.Var(&origins, "allow-origin", "")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	u, err := url.Parse(*to)
	if *to == "" || len(pos) > 0 || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &UsageError{Msg: "need --to http(s)://HOST[:PORT] of the decision server"}
	}
	if len(origins) == 0 {
		origins = multiFlag{"*"}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "CORS proxy on http://%s → %s\n", ln.Addr(), u)
	return serveUntil(ctx, ln, newProxy(u, origins))
}

func newProxy(u *url.URL, origins []string) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(u)
	inner := rp.Director
	rp.Director = func(r *http.Request) {
		inner(r)
		r.Host = u.Host
		r.Header.Del("Origin") // the server need not know about the page
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		// The proxy owns CORS; drop the server's own headers.
		for k := range resp.Header {
			if len(k) > 12 && k[:12] == "Access-Contr" {
				resp.Header.Del(k)
			}
		}
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		service.WriteError(w, http.StatusBadGateway, "proxy_error", "the decision server at %s did not answer: %v", u, err)
	}
	return service.CORS(origins, rp)
}
