//go:build js && wasm

package browser

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall/js"
	"time"

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
		msg := "promise rejected"
		if len(args) > 0 {
			msg = args[0].Call("toString").String()
		}
		ch <- result{err: errors.New(msg)}
		return nil
	})
	defer then.Release()
	defer catch.Release()
	p.Call("then", then).Call("catch", catch)
	r := <-ch
	return r.v, r.err
}

// File is a browser File (or Blob) read by range.
type File struct {
	v    js.Value
	name string
	size int64
	// A span handed over by Preload.
	pmu    sync.Mutex
	pre    []byte
	preOff int64
}

// NewFile wraps a File object; name is its path within the set.
func NewFile(v js.Value, name string) *File {
	return &File{v: v, name: name, size: int64(v.Get("size").Float())}
}

// Size is the file's size.
func (f *File) Size() int64 { return f.size }

// ReadAt reads len(p) bytes at off with one File.slice().arrayBuffer().
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	want, done, err := source.Span(off, len(p), f.size)
	if done {
		return 0, err
	}
	if f.fromPreload(p[:want], off) {
		if want < int64(len(p)) {
			return int(want), io.EOF
		}
		return int(want), nil
	}
	end := off + want
	ab, err := Await(f.v.Call("slice", float64(off), float64(end)).Call("arrayBuffer"))
	if err != nil {
		return 0, err
	}
	n := js.CopyBytesToGo(p, js.Global().Get("Uint8Array").New(ab))
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// Preload hands over bytes [off, off+len(data)) of the file, read by
// someone else (the audit's engine worker reads the next segment for a
// pool worker while it computes): reads inside the span are served from
// it. It replaces the previous span; data must not change afterwards.
func (f *File) Preload(off int64, data []byte) {
	f.pmu.Lock()
	f.pre, f.preOff = data, off
	f.pmu.Unlock()
}

func (f *File) fromPreload(p []byte, off int64) bool {
	f.pmu.Lock()
	defer f.pmu.Unlock()
	if f.pre == nil || off < f.preOff || off+int64(len(p)) > f.preOff+int64(len(f.pre)) {
		return false
	}
	copy(p, f.pre[off-f.preOff:])
	return true
}

// Preload hands over bytes of the file name (see File.Preload).
func (fsys *Files) Preload(name string, off int64, data []byte) {
	if f := fsys.byName[path.Clean(name)]; f != nil {
		f.Preload(off, data)
	}
}

// Files is a set of browser files as an fs.FS (flat or with folders).
type Files struct {
	byName map[string]*File
}

// FromFileList makes an FS from a FileList (an <input type=file> or a drop).
// With a folder chosen (webkitRelativePath), the top folder's name is
// dropped, so the folder's own files are at the root.
func FromFileList(list js.Value) *Files {
	fs := &Files{byName: map[string]*File{}}
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
func NewFiles() *Files { return &Files{byName: map[string]*File{}} }

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

// Open implements fs.FS.
func (fsys *Files) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if f, ok := fsys.byName[name]; ok {
		return &handle{File: f}, nil
	}
	// A folder: list what is under it.
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	var ents []fs.DirEntry
	for n, f := range fsys.byName {
		if rest, ok := strings.CutPrefix(n, prefix); ok && !strings.Contains(rest, "/") {
			ents = append(ents, fs.FileInfoToDirEntry(info{f}))
		}
	}
	if len(ents) == 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	return &dir{name: name, ents: ents}, nil
}

type handle struct {
	*File
	off int64
}

func (h *handle) Read(p []byte) (int, error) {
	n, err := h.ReadAt(p, h.off)
	h.off += int64(n)
	return n, err
}
func (h *handle) Stat() (fs.FileInfo, error) { return info{h.File}, nil }
func (h *handle) Close() error               { return nil }

type info struct{ f *File }

func (i info) Name() string       { return path.Base(i.f.name) }
func (i info) Size() int64        { return i.f.size }
func (i info) Mode() fs.FileMode  { return 0o444 }
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return false }
func (i info) Sys() any           { return nil }

type dir struct {
	name string
	ents []fs.DirEntry
	pos  int
}

func (d *dir) Read([]byte) (int, error) { return 0, errors.New("is a directory") }
func (d *dir) Stat() (fs.FileInfo, error) {
	return dirInfo(d.name), nil
}
func (d *dir) Close() error { return nil }
func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.pos:]
	if n <= 0 {
		d.pos = len(d.ents)
		return rest, nil
	}
	if len(rest) == 0 {
		return nil, io.EOF
	}
	k := min(n, len(rest))
	d.pos += k
	return rest[:k], nil
}

type dirInfo string

func (d dirInfo) Name() string       { return path.Base(string(d)) }
func (d dirInfo) Size() int64        { return 0 }
func (d dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o555 }
func (d dirInfo) ModTime() time.Time { return time.Time{} }
func (d dirInfo) IsDir() bool        { return true }
func (d dirInfo) Sys() any           { return nil }

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
