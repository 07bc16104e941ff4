package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"io/fs"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// digestFS computes the SHA-256 of every file a check opens from the bytes
// the check reads, as they pass: a file read in order (the quick audit's
// scan, a header, a config) is hashed at no extra read; what was read out
// of order (the deep audit's pairs, largest first, in parallel) is read
// again in order at the end, by Finish.
type digestFS struct {
	fs.FS
	mu    sync.Mutex
	files map[string]*tracker
}

func newDigestFS(fsys fs.FS) *digestFS { return &digestFS{FS: fsys, files: map[string]*tracker{}} }

// tracker hashes one file's bytes in order.
type tracker struct {
	mu   sync.Mutex
	h    hash.Hash
	next atomic.Int64 // bytes hashed so far
	size int64
	ns   atomic.Int64 // time spent hashing as the bytes passed
}

// saw takes bytes [off, off+len(b)) read by the check.
func (t *tracker) saw(b []byte, off int64) {
	if off > t.next.Load() || len(b) == 0 {
		return // out of order: Finish reads it again
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	next := t.next.Load()
	if off <= next && off+int64(len(b)) > next {
		t0 := time.Now()
		t.h.Write(b[next-off:])
		t.ns.Add(int64(time.Since(t0)))
		t.next.Store(off + int64(len(b)))
	}
}

func (d *digestFS) Open(name string) (fs.File, error) {
	f, err := d.FS.Open(name)
	if err != nil {
		return nil, err
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return f, nil
	}
	var size int64
	if s, ok := f.(source.SizedReaderAt); ok {
		size = s.Size()
	} else if st, err := f.Stat(); err == nil && !st.IsDir() {
		size = st.Size()
	} else {
		return f, nil
	}
	d.mu.Lock()
	t := d.files[name]
	if t == nil {
		t = &tracker{h: sha256.New(), size: size}
		d.files[name] = t
	}
	d.mu.Unlock()
	return &trackedFile{File: f, ra: ra, t: t, size: size}, nil
}

// Stat and ReadDir go to the files themselves (no open, no request).
func (d *digestFS) Stat(name string) (fs.FileInfo, error)      { return fs.Stat(d.FS, name) }
func (d *digestFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(d.FS, name) }

type trackedFile struct {
	fs.File
	ra   io.ReaderAt
	t    *tracker
	size int64
}

func (f *trackedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.ra.ReadAt(p, off)
	f.t.saw(p[:n], off)
	return n, err
}

func (f *trackedFile) Size() int64 { return f.size }

// Finish completes every opened file's digest, reading in order what the
// check read out of order, and returns the files sorted by name.
func (d *digestFS) Finish(ctx context.Context) ([]report.FileInfo, report.DigestSummary, error) {
	start := time.Now()
	d.mu.Lock()
	names := make([]string, 0, len(d.files))
	for n := range d.files {
		names = append(names, n)
	}
	d.mu.Unlock()
	sort.Strings(names)
	sum := report.DigestSummary{Computed: true}
	var out []report.FileInfo
	buf := make([]byte, 16<<20) // over HTTP, one Range request each
	for _, n := range names {
		t := d.files[n]
		t.mu.Lock()
		next := t.next.Load()
		if next < t.size {
			f, err := source.Open(d.FS, n)
			if err != nil {
				t.mu.Unlock()
				return nil, sum, err
			}
			for off := next; off < t.size; {
				if err := ctx.Err(); err != nil {
					f.Close()
					t.mu.Unlock()
					return nil, sum, err
				}
				k := int(min(int64(len(buf)), t.size-off))
				if _, err := f.ReadAt(buf[:k], off); err != nil && !(err == io.EOF && off+int64(k) == t.size) {
					f.Close()
					t.mu.Unlock()
					return nil, sum, err
				}
				t.h.Write(buf[:k])
				off += int64(k)
			}
			f.Close()
			sum.Reread += t.size - next
			t.next.Store(t.size)
		}
		sum.Bytes += t.size
		sum.Seconds += time.Duration(t.ns.Load()).Seconds()
		out = append(out, report.FileInfo{Name: n, Size: t.size, SHA256: hex.EncodeToString(t.h.Sum(nil))})
		t.mu.Unlock()
	}
	sum.Seconds += time.Since(start).Seconds()
	return out, sum, nil
}
