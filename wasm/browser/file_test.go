//go:build js && wasm

package browser

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall/js"
	"testing"
	"testing/fstest"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// Run with: GOOS=js GOARCH=wasm go test -exec "node $PWD/scripts/wasm-node.js"
// ./wasm/browser (Node has Blob, with slice and arrayBuffer, as File is).

func blob(data []byte) js.Value {
	u8 := js.Global().Get("Uint8Array").New(len(data))
	js.CopyBytesToJS(u8, data)
	parts := js.Global().Get("Array").New()
	parts.Call("push", u8)
	return js.Global().Get("Blob").New(parts)
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*5>>2) ^ seed
	}
	return b
}

// TestFiles: a set of Blobs as an fs.FS over source.RangeFS: reads by
// range, folders, and the preloaded span.
func TestFiles(t *testing.T) {
	if !js.Global().Get("Blob").Truthy() {
		t.Skip("no Blob here")
	}
	a, b := pattern(5000, 1), pattern(300, 2)
	files := NewFiles()
	files.Add(blob(a), "adapter_model.safetensors")
	files.Add(blob(b), "refs/b.bin")
	files.Add(blob([]byte(`{"r": 8}`)), "adapter_config.json")
	if err := fstest.TestFS(files, "adapter_model.safetensors", "adapter_config.json"); err != nil {
		t.Fatal(err)
	}
	ents, err := fs.ReadDir(files, "refs")
	if err != nil || len(ents) != 1 || ents[0].Name() != "b.bin" {
		t.Errorf("ReadDir(refs): %v %v", ents, err)
	}
	f, err := files.Open("adapter_model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	ra := f.(io.ReaderAt)
	p := make([]byte, 100)
	if n, err := ra.ReadAt(p, 4950); n != 50 || err != io.EOF || !bytes.Equal(p[:50], a[4950:]) {
		t.Errorf("ReadAt at the end: %d %v", n, err)
	}
	// A preloaded span serves reads inside it, and only those: its bytes
	// differ from the file's here, to tell them apart.
	span := bytes.Repeat([]byte{0xee}, 1000)
	files.Preload("adapter_model.safetensors", 1000, span)
	if _, err := ra.ReadAt(p, 1500); err != nil || !bytes.Equal(p, span[:100]) {
		t.Errorf("inside the span: %v %x", err, p[:4])
	}
	if _, err := ra.ReadAt(p, 1950); err != nil || !bytes.Equal(p, a[1950:2050]) {
		t.Errorf("across the span's end: %v", err)
	}
	files.Preload("adapter_model.safetensors", 0, nil)
	if _, err := ra.ReadAt(p, 1500); err != nil || !bytes.Equal(p, a[1500:1600]) {
		t.Errorf("after the span is dropped: %v", err)
	}
	if v := files.Value("refs/b.bin"); v.Get("size").Int() != 300 {
		t.Errorf("Value: %v", v)
	}
	if _, err := files.Open("nope"); err == nil {
		t.Error("a missing file opened")
	}
}

// TestFileChanged: a picked File the browser refuses to read because it
// changed on disk (NotReadableError, NotFoundError), or that gives fewer
// bytes than it had when picked, is a could-not-check error
// (report.ErrChanged: the audit's input.changed), naming the file; any
// other failure stays what it is.
func TestFileChanged(t *testing.T) {
	if !js.Global().Get("DOMException").Truthy() {
		t.Skip("no DOMException here")
	}
	// A File-like object whose reads reject with the given exception, or
	// resolve to n bytes.
	mk := js.Global().Call("eval", `((reject, n) => ({size: 1000, name: "x", slice: (a, b) => ({
		arrayBuffer: () => reject ? Promise.reject(reject) : Promise.resolve(new ArrayBuffer(n)),
	})}))`)
	dom := func(name string) js.Value {
		return js.Global().Get("DOMException").New("The requested file could not be read", name)
	}
	for _, c := range []struct {
		what    string
		v       js.Value
		changed bool
	}{
		{"NotReadableError", mk.Invoke(dom("NotReadableError"), 0), true},
		{"NotFoundError", mk.Invoke(dom("NotFoundError"), 0), true},
		{"shrank", mk.Invoke(js.Null(), 10), true},
		{"AbortError", mk.Invoke(dom("AbortError"), 0), false},
		{"a TypeError", mk.Invoke(js.Global().Get("TypeError").New("boom"), 0), false},
	} {
		f := NewFile(c.v, "adapter_model.safetensors")
		_, err := f.ReadAt(make([]byte, 100), 200)
		if err == nil {
			t.Fatalf("%s: no error", c.what)
		}
		if got := errors.Is(err, report.ErrChanged); got != c.changed {
			t.Errorf("%s: %v: changed %v, want %v", c.what, err, got, c.changed)
		}
		if c.changed {
			fds := findings.Of(err, "adapter_model.safetensors")
			if len(fds) != 1 || fds[0].Code != report.InputChanged || fds[0].Severity != report.Unchecked ||
				!strings.Contains(fds[0].Message, "adapter_model.safetensors") || !strings.Contains(fds[0].Message, "pick it again") {
				t.Errorf("%s: findings %+v, want one input.changed (error) naming the file and saying to pick it again", c.what, fds)
			}
		}
	}
	// Await keeps the exception's name; a rejection with a string, a
	// number, null or undefined gives its text (it once panicked).
	_, err := Await(js.Global().Get("Promise").Call("reject", dom("NotReadableError")))
	var je *JSError
	if !errors.As(err, &je) || je.Name != "NotReadableError" || !strings.Contains(je.Msg, "could not be read") {
		t.Errorf("Await of a rejected DOMException: %#v", err)
	}
	for _, c := range []struct {
		reason any
		want   string
	}{{"plain", "plain"}, {nil, "null"}, {js.Undefined(), "undefined"}, {7, "7"}} {
		if _, err := Await(js.Global().Get("Promise").Call("reject", c.reason)); err == nil || err.Error() != c.want {
			t.Errorf("Await of a promise rejected with %q: %v", c.want, err)
		}
	}
}
