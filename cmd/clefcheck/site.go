//go:build !wasm

// The site commands need go-app's server side, which exists only natively.

package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/service"
	"github.com/kvit-s/clefcheck/web"
)

// SiteCommand writes the static site.
type SiteCommand struct{ stdout, stderr io.Writer }

func (c *SiteCommand) Usage() string {
	return `Usage: clefcheck site [flags]

Writes the static site: every page's HTML, app.js, wasm_exec.js, the
service worker and manifest (go-app), app.wasm and the assets from --web,
and the demo world's small files (adapter, report, records, reference
answers) under demo/. The Version changes with app.wasm, so browsers never
keep a stale app. With --base the site works under that sub-path (GitHub
Pages), links included. With --space it adds a README.md with the front
matter of a static Hugging Face Space.
`
}

func (c *SiteCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("site", c.Usage)
	out := fs.String("out", "build/site", "output folder `DIR`")
	base := fs.String("base", "", "URL path `PREFIX`, e.g. /clefcheck (default: the root)")
	webDir := fs.String("web", "build/web", "the folder `DIR` with app.wasm and the assets")
	worldDir := fs.String("world", "demo", "the demo world `DIR` (generated if missing)")
	space := fs.Bool("space", false, "also write the Space's README.md")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &UsageError{Msg: "site takes no arguments"}
	}
	prefix := strings.TrimRight(*base, "/")
	if prefix != "" && (!strings.HasPrefix(prefix, "/") || strings.ContainsAny(prefix, " ?#\"'<>")) {
		return &UsageError{Msg: "--base must be a path like /clefcheck"}
	}
	if err := writeSite(*out, prefix, *webDir, *worldDir); err != nil {
		return err
	}
	if *space {
		readme := "---\ntitle: clefcheck\nemoji: 🔎\ncolorFrom: blue\ncolorTo: gray\nsdk: static\napp_file: index.html\nmodels:\n- kvit-s/clef-lora-r256\npinned: false\nlicense: apache-2.0\nshort_description: Verify a LoRA adapter's claims in your browser\n---\n\n" +
			"clefcheck checks a PEFT LoRA adapter extracted by SVD (kvit-s/clef-lora-r256) against its claims, in the browser: nothing is uploaded.\n"
		if err := os.WriteFile(filepath.Join(*out, "README.md"), []byte(readme), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "wrote the static site to %s (base %q)\n", *out, prefix+"/")
	return nil
}

// identity resolves /web/... to itself: the site's root.
type identity struct{}

func (identity) Resolve(location string) string { return location }

func writeSite(out, prefix, webDir, worldDir string) error {
	wasm, err := os.ReadFile(filepath.Join(webDir, "app.wasm"))
	if err != nil {
		return fmt.Errorf("no app.wasm in %s (run make wasm): %w", webDir, err)
	}
	if _, err := os.Stat(filepath.Join(worldDir, "reference", "answers")); err != nil {
		if err := service.BuildDemo(worldDir, 1); err != nil {
			return err
		}
	}
	sum := sha256.Sum256(append(wasm, readOptional(filepath.Join(webDir, "engine.wasm"))...))
	var res app.ResourceResolver = identity{}
	if prefix != "" {
		res = app.PrefixedLocation(prefix)
	}
	web.Routes()
	h := web.Handler(hex.EncodeToString(sum[:8]), res)
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := app.GenerateStaticWebsite(out, h, web.Pages...); err != nil {
		return err
	}
	if err := copyTree(webDir, filepath.Join(out, "web"), func(string) bool { return true }); err != nil {
		return err
	}
	// The demo world's files the pages read: the adapter, records and
	// answers, and the base checkpoint and head for the Demo page's
	// in-browser model (8 MB); the tuned checkpoint and the hidden states
	// stay out.
	small := func(rel string) bool {
		for _, p := range []string{"adapter/", "records/", "reference/answers/", "base/"} {
			if strings.HasPrefix(rel, p) {
				return true
			}
		}
		return rel == "world.json" || rel == "head.safetensors"
	}
	if err := copyTree(worldDir, filepath.Join(out, "demo"), small); err != nil {
		return err
	}
	// go-app writes each page as embed.html (for hosts that add .html); a
	// plain file server answers /embed only from embed/index.html (by a
	// redirect to /embed/), so each page is written there too.
	for _, p := range web.Pages {
		if p == "/" {
			continue
		}
		name := filepath.Join(out, filepath.FromSlash(strings.TrimPrefix(p, "/")))
		page, err := os.ReadFile(name + ".html")
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(name, "index.html"), page); err != nil {
			return err
		}
	}
	// Static hosts serve 404.html for unknown paths: the app then routes.
	index, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "404.html"), index, 0o644)
}

func copyTree(src, dst string, keep func(rel string) bool) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || !keep(rel) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return writeFile(filepath.Join(dst, rel), data)
	})
}

// readOptional is a file's content, or nothing if it cannot be read.
func readOptional(name string) []byte {
	b, _ := os.ReadFile(name)
	return b
}

func init() {
	commands["site"] = func() Command { return &SiteCommand{stdout: os.Stdout, stderr: os.Stderr} }
}

// writeFile writes data to path, creating its folder.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
