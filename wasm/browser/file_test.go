//go:build js && wasm

package browser

import (
	"bytes"
	"io"
	"io/fs"
	"syscall/js"
	"testing"
	"testing/fstest"
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
