package source

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"
)

// Ranger is a set of named files read by range: what RangeFS serves. The
// HTTP source's server is one (Range requests), the browser's Files
// another (File.slice(a, b).arrayBuffer()).
type Ranger interface {
	// Probe learns the size of the file name (fs.ErrNotExist if there is
	// none). A backend that must read to learn it (HTTP: a Range request,
	// whose Content-Range gives the size) reads up to n bytes from the
	// start in passing and returns them as head; others return nil.
	Probe(ctx context.Context, name string, n int) (size int64, head []byte, err error)
	// ReadRange fills p with bytes [off, off+len(p)) of name, which lie
	// inside the file.
	ReadRange(ctx context.Context, name string, off int64, p []byte) error
}

// Lister is a Ranger that knows its files: RangeFS then opens folders (the
// names' parents) too, as fs.ReadDirFile.
type Lister interface {
	Names() []string // sorted
}

// RangeFS is a Ranger's files as an fs.FS (and fs.StatFS) whose files are
// io.ReaderAt: nothing is read whole. A read is served, in this order, from
// the bytes Open read (FirstChunk), from the file's preloaded span
// (Preload), from the file's read-ahead window, from its small-read
// chunks (Chunk), and otherwise from the Ranger: with one read of
// ReadAhead bytes kept as the new window, or one of exactly the bytes
// asked, into the caller's buffer.
type RangeFS struct {
	// FirstChunk is how many bytes Open asks the Ranger's Probe for and
	// keeps (the safetensors header usually fits): for HTTP, one request
	// for the size and the header together.
	FirstChunk int
	// Chunk, when positive, serves reads smaller than Chunk bytes from
	// aligned chunks of Chunk bytes, themselves read from the Ranger, at
	// most maxChunks of them kept per file for all its open handles: many
	// small tensors then cost a few reads, not one each (nor one per
	// handle).
	Chunk int
	// ReadAhead, when positive, makes a larger read (of less than
	// ReadAhead bytes, outside the chunks) read at least ReadAhead bytes
	// and keep them (one window per open file): sequential tensor reads
	// then cost one read per window, not one each.
	ReadAhead int64
	// Ctx is passed to the Ranger (nil: context.Background).
	Ctx context.Context

	r      Ranger
	spans  Spans
	chunks chunks
	omu    sync.Mutex
	obs    []func(name string, off int64, b []byte)
}

// Observe calls fn with every range read from the Ranger (by Open, by the
// files' reads, by ReadRange), from the goroutine that read it: the bytes
// are the reader's and change after fn returns (copy what is kept). The
// audit's digests are computed from them as they pass.
func (fsys *RangeFS) Observe(fn func(name string, off int64, b []byte)) {
	fsys.omu.Lock()
	fsys.obs = append(fsys.obs, fn)
	fsys.omu.Unlock()
}

// Observed tells whether anyone observes the reads.
func (fsys *RangeFS) Observed() bool {
	fsys.omu.Lock()
	defer fsys.omu.Unlock()
	return len(fsys.obs) > 0
}

func (fsys *RangeFS) saw(name string, off int64, b []byte) {
	fsys.omu.Lock()
	obs := fsys.obs
	fsys.omu.Unlock()
	for _, fn := range obs {
		fn(name, off, b)
	}
}

// ReadRange fills p with bytes [off, off+len(p)) of name, which lie inside
// the file, from the Ranger (not from what the open files keep), and tells
// the observers: the browser audit's dealer reads the pool's segments so.
func (fsys *RangeFS) ReadRange(ctx context.Context, name string, off int64, p []byte) error {
	if err := fsys.r.ReadRange(ctx, name, off, p); err != nil {
		return err
	}
	fsys.saw(name, off, p)
	return nil
}

// NewRangeFS serves r's files, reading each range as it is asked (set
// FirstChunk, Chunk and ReadAhead for more).
func NewRangeFS(r Ranger) *RangeFS { return &RangeFS{r: r} }

// SetContext makes ctx the context of the reads made through the file
// system (Open, Stat, ReadAt): a job's sources stop with it. Call it before
// the first read.
func (fsys *RangeFS) SetContext(ctx context.Context) { fsys.Ctx = ctx }

func (fsys *RangeFS) ctx() context.Context {
	if fsys.Ctx != nil {
		return fsys.Ctx
	}
	return context.Background()
}

// Preload hands over bytes [off, off+len(data)) of file name, read by
// someone else (the browser audit's dealer reads the next segment for a
// pool worker while it computes): reads inside the span are served from
// it, with no read from the Ranger. It replaces the file's previous span
// (nil data drops it); data must not change afterwards.
func (fsys *RangeFS) Preload(name string, off int64, data []byte) {
	fsys.spans.Put(path.Clean(name), off, data)
}

// Open opens the file name (with a Lister, a folder too).
func (fsys *RangeFS) Open(name string) (fs.File, error) { return fsys.open(name, fsys.FirstChunk) }

// Stat reports a file's size (fs.StatFS), probing it for one byte.
func (fsys *RangeFS) Stat(name string) (fs.FileInfo, error) {
	f, err := fsys.open(name, 1)
	if err != nil {
		return nil, err
	}
	return f.Stat()
}

func (fsys *RangeFS) open(name string, n int) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if fsys.r == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("source: a RangeFS with no Ranger")}
	}
	size, head, err := fsys.r.Probe(fsys.ctx(), name, n)
	if err != nil {
		if l, ok := fsys.r.(Lister); ok && errors.Is(err, fs.ErrNotExist) {
			if d := fsys.dir(l, name); d != nil {
				return d, nil
			}
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	fsys.saw(name, 0, head)
	return &rangeFile{fsys: fsys, name: name, size: size, head: head}, nil
}

// dir is the folder name of l's files (nil if no file is in it).
func (fsys *RangeFS) dir(l Lister, name string) *dir {
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	var ents []fs.DirEntry
	for _, n := range l.Names() {
		if rest, ok := strings.CutPrefix(n, prefix); ok && !strings.Contains(rest, "/") {
			size, _, err := fsys.r.Probe(fsys.ctx(), n, 0)
			if err == nil {
				ents = append(ents, fs.FileInfoToDirEntry(fileInfo{n, size}))
			}
		}
	}
	if len(ents) == 0 {
		return nil
	}
	return &dir{name: name, ents: ents} // sorted, as the names are
}

// rangeFile is an open file of a RangeFS.
type rangeFile struct {
	fsys *RangeFS
	name string
	size int64
	head []byte // bytes [0, len(head)) of the file, read by Open
	mu   sync.Mutex
	off  int64 // for Read
	cmu  sync.Mutex
	win  span // the read-ahead window
}

func (f *rangeFile) Size() int64 { return f.size }

// ReadAt reads len(p) bytes at off (fewer, and io.EOF, at the end).
func (f *rangeFile) ReadAt(p []byte, off int64) (int, error) {
	want, done, err := Span(off, len(p), f.size)
	if done {
		return 0, err
	}
	fsys, q := f.fsys, p[:want]
	switch {
	case off+want <= int64(len(f.head)):
		copy(q, f.head[off:off+want])
	case fsys.spans.Fill(f.name, q, off):
	case f.fromWindow(q, off):
	case want < int64(fsys.Chunk):
		if err := f.fromChunks(q, off); err != nil {
			return 0, err
		}
	case fsys.ReadAhead > want:
		data := make([]byte, min(fsys.ReadAhead, f.size-off))
		if err := fsys.ReadRange(fsys.ctx(), f.name, off, data); err != nil {
			return 0, err
		}
		copy(q, data)
		f.cmu.Lock()
		f.win = span{off, data}
		f.cmu.Unlock()
	default:
		if err := fsys.ReadRange(fsys.ctx(), f.name, off, q); err != nil {
			return 0, err
		}
	}
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

// View serves bytes [off, off+n) without a copy from the file's head or
// from the span handed over to it (Preload), when one holds them all
// (source.Viewer); not from the read-ahead window, which the next read
// through the handle may replace.
func (f *rangeFile) View(off int64, n int) ([]byte, bool) {
	if off < 0 || n < 0 || off+int64(n) > f.size {
		return nil, false
	}
	if end := off + int64(n); end <= int64(len(f.head)) {
		return f.head[off:end:end], true
	}
	return f.fsys.spans.View(f.name, off, n)
}

func (f *rangeFile) fromWindow(p []byte, off int64) bool {
	f.cmu.Lock()
	ok := f.win.fill(p, off)
	f.cmu.Unlock()
	return ok
}

// fromChunks fills p from the chunks covering [off, off+len(p)).
func (f *rangeFile) fromChunks(p []byte, off int64) error {
	size := int64(f.fsys.Chunk)
	for len(p) > 0 {
		c := off / size * size
		data, err := f.chunk(c, size)
		if err != nil {
			return err
		}
		n := copy(p, data[off-c:])
		p, off = p[n:], off+int64(n)
	}
	return nil
}

func (f *rangeFile) chunk(c, size int64) ([]byte, error) {
	return f.fsys.chunks.get(f.name, c, func() ([]byte, error) {
		data := make([]byte, min(size, f.size-c))
		if err := f.fsys.ReadRange(f.fsys.ctx(), f.name, c, data); err != nil {
			return nil, err
		}
		return data, nil
	})
}

func (f *rangeFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	return n, err
}

func (f *rangeFile) Stat() (fs.FileInfo, error) { return fileInfo{f.name, f.size}, nil }
func (f *rangeFile) Close() error               { return nil }

type fileInfo struct {
	name string
	size int64
}

func (i fileInfo) Name() string       { return path.Base(i.name) }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }

// dir is an open folder of a Lister's files.
type dir struct {
	name string
	ents []fs.DirEntry
	pos  int
}

func (d *dir) Read([]byte) (int, error)   { return 0, errors.New("is a directory") }
func (d *dir) Stat() (fs.FileInfo, error) { return dirInfo(d.name), nil }
func (d *dir) Close() error               { return nil }

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
