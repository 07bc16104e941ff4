//go:build js && wasm

package web

import (
	"context"
	"errors"
	"net/url"
	"runtime"
	"syscall/js"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// pickedNames lists the files of the FileList stashed in the JS global
// name (by an input or a drop handler); the engine worker reads them.
func pickedNames(name string) ([]string, error) {
	list := js.Global().Get(name)
	if !list.Truthy() || list.Get("length").Int() == 0 {
		return nil, errors.New("no files chosen")
	}
	names := make([]string, list.Length())
	for i := range names {
		f := list.Index(i)
		names[i] = f.Get("name").String()
		if n := list.Get("names"); n.Truthy() { // a dropped folder's paths
			names[i] = n.Index(i).String()
		} else if rel := f.Get("webkitRelativePath"); rel.Truthy() && rel.String() != "" {
			names[i] = rel.String()
		}
	}
	return names, nil
}

// InstallDiagnostics defines clefcheckStacks() in the page: every
// goroutine's stack of the page's Go program (app.wasm) and the engine
// worker's state, as text, the worker's own stacks going to the console.
// It is what a report of a page that waits forever needs (the tests call
// it when they wait in vain).
func InstallDiagnostics() {
	js.Global().Set("clefcheckStacks", js.FuncOf(func(js.Value, []js.Value) any {
		buf := make([]byte, 256<<10)
		buf = buf[:runtime.Stack(buf, true)]
		return engine.Stacks("asked from the page (clefcheckStacks)") + "\n\n" + string(buf)
	}))
}

// engine is the engine worker (engine.wasm) every page's work runs in.
var engine = &browser.Engine{}

// runJob runs spec in the engine worker, attaching the FileLists its
// "files" inputs name (JS globals set by the pickers).
func runJob(ctx context.Context, spec *jobs.Spec, onEvent func(jobs.Event)) (*jobs.Output, error) {
	if engine.WorkerURL == "" {
		engine.WorkerURL = siteURL("web/worker.js") + "?v=" + url.QueryEscape(app.Getenv("GOAPP_VERSION"))
	}
	spec.Engine = "clefcheck site " + app.Getenv("GOAPP_VERSION") // app.wasm + engine.wasm
	files := map[string]js.Value{}
	for _, in := range spec.Inputs() {
		if in.Files != "" {
			files[in.Files] = js.Global().Get(in.Files)
		}
	}
	out, err := engine.Run(ctx, spec, files, onEvent)
	keepTables(out)
	return out, err
}

// resetEngine stops the engine worker (its jobs fail with why); the next
// job starts a new one.
func resetEngine(why string) { engine.Reset(why) }

// hostAnswers tells whether the host at u answers this page at all: a
// no-cors request needs no CORS from it, so it fails only when nothing
// answers (or not within a few seconds).
func hostAnswers(u string) bool {
	fn := js.Global().Get("clefcheckAnswers")
	if fn.Type() != js.TypeFunction {
		return false
	}
	v, err := browser.Await(fn.Invoke(u))
	return err == nil && v.Truthy()
}

// dropped takes a drop's files, folders read recursively (clefcheckDropped
// in public/folders.js, called while the event lasts), stashes them in the
// JS global name and calls then with their paths.
func dropped(ctx app.Context, e app.Event, name string, then func([]string, error)) {
	app.Window().Set("__clefcheckDrop", app.Window().Call("clefcheckDropOf", e.Value))
	ctx.Async(func() {
		v, err := browser.Await(js.Global().Get("__clefcheckDrop"))
		var names []string
		if err == nil {
			js.Global().Set(name, v)
			names, err = pickedNames(name)
		}
		dispatch(ctx, func(ctx app.Context) { then(names, err) })
	})
}

// siteHasService tells whether this site runs the demo decision service
// (GET health answers; clefcheckHasService in public/folders.js): on a
// static host it does not, and the pages then decide with the demo model
// in the browser.
func siteHasService() bool {
	v, err := browser.Await(js.Global().Call("clefcheckHasService", siteURL("health")))
	return err == nil && v.Truthy()
}
