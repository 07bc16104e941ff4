//go:build !(js && wasm)

package web

import (
	"errors"
	"io/fs"
)

// pickedFiles exists only in the browser.
func pickedFiles(string) (fs.FS, []string, error) {
	return nil, nil, errors.New("local files can be read only in the browser")
}

func newYield() func() error { return nil }
