// Package browser is the engine's only door to the browser (syscall/js):
// browser File objects as io.ReaderAt (File.slice(a, b).arrayBuffer(),
// copied into the caller's buffer), a set of them as an fs.FS, and a
// cooperative yield so that long work leaves the page responsive. Its files
// build only for js/wasm; `make guard` checks that no other engine package
// imports syscall/js or go-app.
package browser
