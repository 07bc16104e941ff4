package hub

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/kvit-s/clefcheck/wasm/source"
)

// ResolveURL is the address of a file of the snapshot: always at its
// commit, never at a branch.
func (s *Snapshot) ResolveURL(file string) string {
	return s.Ref.Endpoint + "/" + s.Ref.Repo + "/resolve/" + s.Commit + "/" + escapePath(file)
}

// Folder is the snapshot's folder (Ref.Path, or a file's folder).
func (s *Snapshot) Folder() string {
	if s.Ref.File {
		if d := path.Dir(s.Ref.Path); d != "." {
			return d
		}
		return ""
	}
	return s.Ref.Path
}

// FS is the snapshot's folder as a file system read by range at the
// commit: its listing answers ReadDir and Stat, its files are read with
// Range requests to the resolve URLs (token to the endpoint's host only).
func (s *Snapshot) FS(token string) (*FS, error) {
	base := s.Ref.Endpoint + "/" + s.Ref.Repo + "/resolve/" + s.Commit + "/"
	if f := s.Folder(); f != "" {
		base += escapePath(f) + "/"
	}
	h, err := source.NewHTTP(base)
	if err != nil {
		return nil, err
	}
	h.Token = token
	out := &FS{HTTP: h, snap: s, files: map[string]File{}, dirs: map[string][]string{}}
	prefix := s.Folder()
	for _, f := range s.Files {
		rel := f.Path
		if prefix != "" {
			rel = strings.TrimPrefix(f.Path, prefix+"/")
		}
		out.files[rel] = f
		for child := rel; child != "."; child = path.Dir(child) { // every folder up to the root lists it
			parent := path.Dir(child)
			out.dirs[parent] = append(out.dirs[parent], path.Base(child))
		}
	}
	for d, names := range out.dirs {
		sort.Strings(names)
		out.dirs[d] = dedup(names)
	}
	if _, ok := out.dirs["."]; !ok {
		out.dirs["."] = nil
	}
	return out, nil
}

func dedup(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// FS is a snapshot's folder: an fs.FS, fs.StatFS and fs.ReadDirFS whose
// files are io.ReaderAt over HTTP Range requests.
type FS struct {
	*source.HTTP
	snap  *Snapshot
	files map[string]File     // by path relative to the folder
	dirs  map[string][]string // folder → sorted child names
}

// Snapshot is what the file system reads: the repository at its commit.
func (f *FS) Snapshot() *Snapshot { return f.snap }

// File is the listing's entry for name (relative to the folder).
func (f *FS) File(name string) (File, bool) {
	x, ok := f.files[name]
	return x, ok
}

// Open opens a file (read by range) or a folder of the listing. A name the
// listing lacks does not exist: nothing is guessed.
func (f *FS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if _, ok := f.files[name]; ok {
		return f.HTTP.Open(name)
	}
	if kids, ok := f.dirs[name]; ok {
		return &dirFile{fsys: f, name: name, kids: kids}, nil
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// Stat answers from the listing, with no request.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if x, ok := f.files[name]; ok {
		return info{name: path.Base(name), size: x.Size}, nil
	}
	if _, ok := f.dirs[name]; ok {
		return info{name: path.Base(name), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// ReadDir lists a folder from the listing.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	kids, ok := f.dirs[name]
	if !ok {
		if _, isFile := f.files[name]; isFile {
			return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a folder")}
		}
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(kids))
	for _, k := range kids {
		st, err := f.Stat(path.Join(name, k))
		if err != nil {
			return nil, err
		}
		out = append(out, fs.FileInfoToDirEntry(st))
	}
	return out, nil
}

type dirFile struct {
	fsys *FS
	name string
	kids []string
	done bool
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return info{name: path.Base(d.name), dir: true}, nil }
func (d *dirFile) Read([]byte) (int, error)   { return 0, fmt.Errorf("%s is a folder", d.name) }
func (d *dirFile) Close() error               { return nil }

func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.done {
		if n > 0 {
			return nil, io.EOF
		}
		return nil, nil
	}
	d.done = true
	return d.fsys.ReadDir(d.name)
}

type info struct {
	name string
	size int64
	dir  bool
}

func (i info) Name() string { return i.name }
func (i info) Size() int64  { return i.size }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }
