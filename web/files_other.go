//go:build !(js && wasm)

package web

import (
	"context"
	"errors"
	"io/fs"

	"github.com/kvit-s/clefcheck/wasm/audit"
)

// pickedFiles exists only in the browser.
func pickedFiles(string) (fs.FS, []string, error) {
	return nil, nil, errors.New("local files can be read only in the browser")
}

func newYield() func() error { return nil }

// auditRemote: there are no Web Workers outside the browser.
func auditRemote(fs.FS, audit.Options, func(int, string)) func(context.Context, []audit.Job, func(int64)) ([]audit.Figures, error) {
	return nil
}
