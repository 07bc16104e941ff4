//go:build !wasm

package web

import (
	_ "embed"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
)

// The server side of go-app lives behind !wasm so that app.wasm does not
// carry it (it would double the binary).

// serviceWorker is the site's app-worker.js (go-app fills in the version
// and the shell's files): it serves only the shell from its cache and
// leaves every other request to the network.
//
//go:embed appworker.js
var serviceWorker string

// Handler returns the app's handler; version must change with app.wasm.
func Handler(version string, res app.ResourceResolver) *app.Handler {
	return &app.Handler{
		Name:         "clefcheck",
		ShortName:    "clefcheck",
		Title:        "clefcheck — verify a LoRA adapter",
		Description:  "Checks a PEFT LoRA adapter extracted by SVD (kvit-s/clef-lora-r256) against its claims, in your browser: nothing is uploaded.",
		Author:       "clefcheck",
		Lang:         "en",
		Styles:       []string{"/web/clefcheck.css"},
		Scripts:      []string{"/web/clefcheck.js", "/web/folders.js"},
		Icon:         app.Icon{Default: "/web/icon-192.png", Large: "/web/icon-512.png", SVG: "/web/icon.svg"},
		Version:      version,
		Resources:    res,
		LoadingLabel: "Loading clefcheck ({progress}%)",
		// go-app's default worker answers every request itself, ranges and
		// POSTs included; this one answers only for the shell.
		ServiceWorkerTemplate: serviceWorker,
		RawHeaders: []string{
			// Static hosts set no headers: the page says its referrer policy
			// itself (clefcheck serve sends the header too).
			`<meta name="referrer" content="strict-origin-when-cross-origin">`,
			// app.Raw is never given data from a file or a server; this policy
			// keeps scripts to the site's own and the wasm it compiles.
			`<meta http-equiv="Content-Security-Policy" content="default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self' http: https:; worker-src 'self' blob:">`,
		},
	}
}
