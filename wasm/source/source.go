package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// File is an open file readable by range.
type File struct {
	io.ReaderAt
	Size int64
	Name string
	c    io.Closer
}

// Close closes the file.
func (f *File) Close() error {
	if f.c == nil {
		return nil
	}
	return f.c.Close()
}

// View is bytes [off, off+n) of the file without a copy, when its
// ReaderAt holds them all in memory already (a Viewer); ok is false
// otherwise, and the bytes must then be read.
func (f *File) View(off int64, n int) (b []byte, ok bool) {
	if v, is := f.ReaderAt.(Viewer); is {
		return v.View(off, n)
	}
	return nil, false
}

// A Viewer serves bytes it holds in memory without a copy: the bytes are
// the Viewer's, only to be read (never written, never kept), and valid
// until what holds them is replaced (Spans.Put). RangeFS's files are
// Viewers of their head and of the span handed over to them (Preload): a
// browser pool worker scans the span the dealer sent it in place.
type Viewer interface {
	View(off int64, n int) (b []byte, ok bool)
}

// SizedReaderAt is what a file system's files may implement instead of Stat.
type SizedReaderAt interface {
	io.ReaderAt
	Size() int64
}

// Open opens name in fsys for reading by range. The file must implement
// io.ReaderAt (os files, browser Files and Range-read URLs do). Errors are
// coded file.unreadable.
func Open(fsys fs.FS, name string) (*File, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error(), Err: err}
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		f.Close()
		return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: "file cannot be read by range"}
	}
	var size int64
	if s, ok := f.(SizedReaderAt); ok {
		size = s.Size()
	} else {
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error(), Err: err}
		}
		if st.IsDir() {
			f.Close()
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: "is a directory"}
		}
		size = st.Size()
	}
	return &File{ReaderAt: ra, Size: size, Name: name, c: f}, nil
}

// Exists reports whether name can be opened in fsys.
func Exists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// ReadSmall reads a whole small file (a config, an index, a report), refusing
// one larger than max bytes.
func ReadSmall(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := Open(fsys, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Size > max {
		return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: fmt.Sprintf("file is %d bytes, more than the %d allowed for it", f.Size, max)}
	}
	buf := make([]byte, f.Size)
	if _, err := f.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && f.Size == 0) {
		return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error(), Err: err}
	}
	return buf, nil
}

// Dir is a local directory as an fs.FS whose files are *os.File (io.ReaderAt).
func Dir(path string) fs.FS { return os.DirFS(path) }

// Span checks a ReadAt of n bytes at off in a file of size bytes and
// returns how many bytes exist there; done means the read is answered
// without touching the file (nothing to read, or at the end: err is then
// io.EOF, or nil for an empty read).
func Span(off int64, n int, size int64) (want int64, done bool, err error) {
	switch {
	case off < 0:
		return 0, true, errors.New("negative offset")
	case off >= size && n == 0:
		return 0, true, nil
	case off >= size:
		return 0, true, io.EOF
	}
	return min(int64(n), size-off), false, nil
}
