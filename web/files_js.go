//go:build js && wasm

package web

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"syscall/js"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// pickedFiles returns the FileList stashed in the JS global name (by an
// input or a drop handler) as an fs.FS.
func pickedFiles(name string) (fs.FS, []string, error) {
	list := js.Global().Get(name)
	if !list.Truthy() || list.Get("length").Int() == 0 {
		return nil, nil, errors.New("no files chosen")
	}
	f := browser.FromFileList(list)
	return f, f.Names(), nil
}

func newYield() func() error {
	y := &browser.Yielder{}
	return y.Yield
}

// auditRemote returns an audit.Options.Remote that checks the pairs in Web
// Workers, or nil when they cannot be used for fsys here.
func auditRemote(fsys fs.FS, opt audit.Options, onStart func(int, string)) func(context.Context, []audit.Job, func(int64)) ([]audit.Figures, error) {
	if !browser.CanUseWorkers() {
		return nil
	}
	spec, err := browser.SpecOf(opt)
	if err != nil {
		return nil
	}
	pool := &browser.AuditPool{N: browser.Workers(), Dir: ".", Spec: spec, OnStart: onStart,
		WorkerURL: siteURL("web/worker.js") + "?v=" + url.QueryEscape(app.Getenv("GOAPP_VERSION"))}
	switch f := fsys.(type) {
	case *source.HTTP:
		pool.URL, pool.Token = f.Base.String(), f.Token
	case *browser.Files:
		pool.Files = f
	default:
		return nil
	}
	return pool.Remote
}
