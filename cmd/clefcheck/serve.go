//go:build !wasm

// The site commands need go-app's server side, which exists only natively.

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/service"
	"github.com/kvit-s/clefcheck/web"
)

// ServeCommand hosts the site with the built-in demo world.
type ServeCommand struct{ stdout, stderr io.Writer }

func (c *ServeCommand) Usage() string {
	return `Usage: clefcheck serve [flags]

Hosts the clefcheck web app, the demo world's files under /demo/ (read by the
page with Range requests) and the demo decision service (POST /v1/systemone,
GET /health) on one origin, so that everything works with no GPU and no
download. Stops gracefully on Ctrl-C or SIGTERM. --web is the folder with app.wasm and the static assets (make
wasm puts them in build/web); --world is generated there if missing.
`
}

func (c *ServeCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("serve", c.Usage)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address `HOST:PORT`")
	webDir := fs.String("web", "build/web", "the folder `DIR` with app.wasm and the assets")
	worldDir := fs.String("world", "demo", "the demo world `DIR`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Msg: "serve takes no arguments"}
	}
	h, err := newSiteHandler(*webDir, *worldDir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "clefcheck is at http://%s/ (demo world in %s, decision service at %s)\n", ln.Addr(), *worldDir, service.Path)
	return serveUntil(ctx, ln, h)
}

// staticDir serves /web/... from a folder, for go-app's resource resolver.
type staticDir struct {
	http.Handler
	identity
}

// newSiteHandler assembles the site: the app, the world's files and the
// decision service.
func newSiteHandler(webDir, worldDir string) (http.Handler, error) {
	wasm, err := os.ReadFile(filepath.Join(webDir, "app.wasm"))
	if err != nil {
		return nil, fmt.Errorf("no app.wasm in %s (run make wasm): %w", webDir, err)
	}
	if _, err := os.Stat(filepath.Join(worldDir, "reference", "answers")); err != nil {
		if err := service.BuildDemo(worldDir, 1); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(append(wasm, readOptional(filepath.Join(webDir, "engine.wasm"))...))
	web.Routes()
	ah := web.Handler(hex.EncodeToString(sum[:8]), staticDir{Handler: http.StripPrefix("/web/", http.FileServer(filesOnly{http.Dir(webDir)}))})
	srv, _, err := newDecisionServer(worldDir, "", "", false)
	if err != nil {
		return nil, err
	}
	srv.AllowOrigins = []string{"*"}
	dh := srv.Handler()
	files := http.StripPrefix("/demo/", http.FileServer(filesOnly{http.Dir(worldDir)}))
	mux := http.NewServeMux()
	mux.Handle(service.Path, dh)
	mux.Handle("/health", dh)
	mux.Handle("/demo/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Expose-Headers", "Content-Range, Content-Length, Accept-Ranges")
		files.ServeHTTP(w, r)
	}))
	mux.Handle("/", ah)
	return siteHeaders(mux), nil
}

// filesOnly is a file system whose folders cannot be opened: a file server
// over it lists no folder (and serves no index.html from one), it answers
// 404.
type filesOnly struct{ fs http.FileSystem }

func (f filesOnly) Open(name string) (http.File, error) {
	file, err := f.fs.Open(name)
	if err != nil {
		return nil, err
	}
	if st, err := file.Stat(); err != nil || st.IsDir() {
		file.Close()
		return nil, os.ErrNotExist
	}
	return file, nil
}

// siteHeaders adds the site's security headers to every answer: no MIME
// sniffing, the origin only as referrer to other sites, and no framing
// except for the embeddable Demo page (/embed), which any site may frame.
func siteHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "strict-origin-when-cross-origin")
		if embeddable(r.URL.Path) {
			hd.Set("Content-Security-Policy", "frame-ancestors *")
		} else {
			hd.Set("X-Frame-Options", "DENY")
			hd.Set("Content-Security-Policy", "frame-ancestors 'none'")
		}
		h.ServeHTTP(w, r)
	})
}

// embeddable tells whether a path is the Demo page, made to be framed.
func embeddable(p string) bool {
	return p == "/embed" || strings.HasPrefix(p, "/embed/") || strings.HasPrefix(p, "/embed.")
}

var _ app.ResourceResolver = staticDir{}

func init() {
	commands["serve"] = func() Command { return &ServeCommand{stdout: os.Stdout, stderr: os.Stderr} }
}
