//go:build js && wasm

package web

import (
	"context"
	"errors"
	"net/url"
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
		if rel := f.Get("webkitRelativePath"); rel.Truthy() && rel.String() != "" {
			names[i] = rel.String()
		}
	}
	return names, nil
}

// engine is the engine worker (engine.wasm) every page's work runs in.
var engine = &browser.Engine{}

// runJob runs spec in the engine worker, attaching the FileLists its
// "files" inputs name (JS globals set by the pickers).
func runJob(ctx context.Context, spec *jobs.Spec, onEvent func(jobs.Event)) (*jobs.Output, error) {
	if engine.WorkerURL == "" {
		engine.WorkerURL = siteURL("web/worker.js") + "?v=" + url.QueryEscape(app.Getenv("GOAPP_VERSION"))
	}
	files := map[string]js.Value{}
	for _, in := range spec.Inputs() {
		if in.Files != "" {
			files[in.Files] = js.Global().Get(in.Files)
		}
	}
	return engine.Run(ctx, spec, files, onEvent)
}

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
