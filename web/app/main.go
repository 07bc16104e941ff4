//go:build js && wasm

// Command app is clefcheck's browser entry point, compiled to app.wasm
// (GOOS=js GOARCH=wasm). It imports no server code.
package main

import (
	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/web"
)

func main() {
	browser.Install() // HTTP through the page's fetch: no net/http in app.wasm
	web.Routes()
	web.InstallDiagnostics() // clefcheckStacks(), for a page that waits in vain
	app.RunWhenOnBrowser()
}
