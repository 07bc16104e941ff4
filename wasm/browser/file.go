//go:build js && wasm

package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// Await waits for a JavaScript promise. Call it from a goroutine, never
// from inside a js.FuncOf callback.
func Await(p js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	ch := make(chan result, 1)
	then := js.FuncOf(func(this js.Value, args []js.Value) any {
		ch <- result{v: args[0]}
		return nil
	})
	catch := js.FuncOf(func(this js.Value, args []js.Value) any {
		e := &JSError{Msg: "promise rejected"}
		if len(args) > 0 {
			// String(reason): toString for an object, and no panic for a
			// string, a number, null or undefined (Call would).
			e.Msg = js.Global().Get("String").Invoke(args[0]).String()
			if args[0].Type() == js.TypeObject {
				if n := args[0].Get("name"); n.Type() == js.TypeString {
					e.Name = n.String()
				}
			}
		}
		ch <- result{err: e}
		return nil
	})
	defer then.Release()
	defer catch.Release()
	p.Call("then", then).Call("catch", catch)
	r := <-ch
	return r.v, r.err
}

// JSError is a rejected promise's reason: its text (toString) and, for an
// Error or DOMException, its name.
type JSError struct{ Name, Msg string }

func (e *JSError) Error() string { return e.Msg }

// BlobError is the error for a failed read of a picked File: one the
// browser refuses because the file was modified, moved or deleted on disk
// after it was picked (NotReadableError, NotFoundError) says so and wraps
// report.ErrChanged (the audit's outcome is then input.changed: could not
// check, not a bad file); any other is returned as it is.
func BlobError(err error, name string) error {
	var je *JSError
	if errors.As(err, &je) && (je.Name == "NotReadableError" || je.Name == "NotFoundError") {
		return fmt.Errorf("%s can no longer be read (%w; the browser: %s)", name, report.ErrChanged, je.Msg)
	}
	return err
}

// ShortRead is the error for a read of a picked File that gave got of
// the want bytes at off, inside the size the File had when it was picked:
// the file shrank on disk since (report.ErrChanged, as BlobError).
func ShortRead(name string, got, want int, off int64) error {
	return fmt.Errorf("%s gave %d of the %d bytes at %d, fewer than it had when picked (%w)", name, got, want, off, report.ErrChanged)
}

// File is a browser File (or Blob) read by range.
type File struct {
	v    js.Value
	name string
	size int64
	pre  source.Spans // the span handed over by Preload
}

// NewFile wraps a File object; name is its path within the set.
func NewFile(v js.Value, name string) *File {
	return &File{v: v, name: name, size: int64(v.Get("size").Float())}
}

// Size is the file's size.
func (f *File) Size() int64 { return f.size }

// ReadAt reads len(p) bytes at off with one File.slice().arrayBuffer()
// (or from the span handed over by Preload).
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	want, done, err := source.Span(off, len(p), f.size)
	if done {
		return 0, err
	}
	if !f.pre.Fill("", p[:want], off) {
		if err := f.read(p[:want], off); err != nil {
			return 0, err
		}
	}
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

// read fills p with bytes [off, off+len(p)) of the file, which lie inside
// it.
func (f *File) read(p []byte, off int64) error {
	if pooled(len(p), "clefcheckReadBlob") {
		// Into a kept buffer (buffers.go), then into p.
		r, err := Await(js.Global().Call("clefcheckReadBlob", f.v, float64(off), float64(off+int64(len(p))), TakeBuffer(len(p))))
		if err != nil {
			return BlobError(err, f.name)
		}
		buf := r.Get("buf")
		defer GiveBuffer(buf)
		if n := r.Get("n").Int(); n != len(p) {
			return ShortRead(f.name, n, len(p), off)
		}
		js.CopyBytesToGo(p, js.Global().Get("Uint8Array").New(buf, 0, len(p)))
		return nil
	}
	ab, err := Await(f.v.Call("slice", float64(off), float64(off+int64(len(p)))).Call("arrayBuffer"))
	if err != nil {
		return BlobError(err, f.name)
	}
	if n := js.CopyBytesToGo(p, js.Global().Get("Uint8Array").New(ab)); n < len(p) {
		return ShortRead(f.name, n, len(p), off)
	}
	return nil
}

// Preload hands over bytes [off, off+len(data)) of the file, read by
// someone else: reads inside the span are served from it. It replaces the
// previous span (source.Spans); data must not change afterwards.
func (f *File) Preload(off int64, data []byte) { f.pre.Put("", off, data) }

// Files is a set of browser files as an fs.FS (flat or with folders): a
// source.RangeFS over them, each read with File.slice().arrayBuffer(), as
// asked (no chunks, no read-ahead), or from the span handed over by
// Preload (the audit's dealer reads the next segment for a pool worker
// while it computes).
type Files struct {
	byName map[string]*File
	fs     *source.RangeFS
}

// fileRanger is a set of Files as a source.Ranger (and source.Lister).
type fileRanger Files

func (r *fileRanger) Probe(_ context.Context, name string, _ int) (int64, []byte, error) {
	if f := r.byName[name]; f != nil {
		return f.size, nil, nil
	}
	return 0, nil, fs.ErrNotExist
}

func (r *fileRanger) ReadRange(_ context.Context, name string, off int64, p []byte) error {
	f := r.byName[name]
	if f == nil {
		return fs.ErrNotExist
	}
	return f.read(p, off)
}

func (r *fileRanger) Names() []string { return (*Files)(r).Names() }

// FromFileList makes an FS from a FileList (an <input type=file> or a drop).
// With a folder chosen (webkitRelativePath), the top folder's name is
// dropped, so the folder's own files are at the root.
func FromFileList(list js.Value) *Files {
	fs := NewFiles()
	n := list.Get("length").Int()
	for i := 0; i < n; i++ {
		f := list.Call("item", i)
		name := f.Get("name").String()
		if rel := f.Get("webkitRelativePath"); rel.Truthy() && rel.String() != "" {
			parts := strings.SplitN(rel.String(), "/", 2)
			if len(parts) == 2 {
				name = parts[1]
			}
		}
		fs.Add(f, name)
	}
	return fs
}

// NewFiles is an empty set of files; Add fills it.
func NewFiles() *Files {
	f := &Files{byName: map[string]*File{}}
	f.fs = source.NewRangeFS((*fileRanger)(f))
	return f
}

// Add adds the browser File f under name.
func (fsys *Files) Add(f js.Value, name string) {
	fsys.byName[path.Clean(name)] = NewFile(f, name)
}

// Value is the browser File named name (undefined if there is none), to
// post to a worker.
func (fsys *Files) Value(name string) js.Value {
	if f := fsys.byName[path.Clean(name)]; f != nil {
		return f.v
	}
	return js.Undefined()
}

// Names lists the files, sorted.
func (fsys *Files) Names() []string {
	var out []string
	for n := range fsys.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Open implements fs.FS (source.RangeFS.Open).
func (fsys *Files) Open(name string) (fs.File, error) { return fsys.fs.Open(name) }

// Stat implements fs.StatFS (source.RangeFS.Stat).
func (fsys *Files) Stat(name string) (fs.FileInfo, error) { return fsys.fs.Stat(name) }

// Observe calls fn with every range read from the files
// (source.RangeFS.Observe).
func (fsys *Files) Observe(fn func(name string, off int64, b []byte)) { fsys.fs.Observe(fn) }

// Observed tells whether anyone observes the reads.
func (fsys *Files) Observed() bool { return fsys.fs.Observed() }

// LocalFiles says the files are local (the audit's digest reads them
// itself, beside the checks: runner's read-ahead).
func (fsys *Files) LocalFiles() bool { return true }

// ReadRange reads bytes [off, off+len(p)) of name, which lie inside it,
// telling the observers (source.RangeFS.ReadRange).
func (fsys *Files) ReadRange(ctx context.Context, name string, off int64, p []byte) error {
	return fsys.fs.ReadRange(ctx, name, off, p)
}

// Preload hands over bytes of the file name (source.RangeFS.Preload).
func (fsys *Files) Preload(name string, off int64, data []byte) { fsys.fs.Preload(name, off, data) }

// Yielder lets the page breathe during long work: Go's wasm is
// single-threaded and runtime.Gosched does not return to the browser's event
// loop, but a timer sleep does. Call Yield often; it sleeps 1 ms once every
// Every.
type Yielder struct {
	Every time.Duration
	last  time.Time
}

// Yield sleeps briefly if Every has passed since the last sleep.
func (y *Yielder) Yield() error {
	every := y.Every
	if every == 0 {
		every = 50 * time.Millisecond
	}
	if time.Since(y.last) >= every {
		time.Sleep(time.Millisecond)
		y.last = time.Now()
	}
	return nil
}
