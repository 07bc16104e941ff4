//go:build js && wasm

package web

import (
	"errors"
	"io/fs"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/browser"
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
