package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"
)

// fake is a Ranger over files in memory that records its reads.
type fake struct {
	files  map[string][]byte
	probes int
	reads  []string // "name@off+n"
	list   bool
}

func (f *fake) Probe(_ context.Context, name string, n int) (int64, []byte, error) {
	data, ok := f.files[name]
	if !ok {
		return 0, nil, fs.ErrNotExist
	}
	f.probes++
	return int64(len(data)), bytes.Clone(data[:min(n, len(data))]), nil
}

func (f *fake) ReadRange(_ context.Context, name string, off int64, p []byte) error {
	data := f.files[name]
	if off < 0 || off+int64(len(p)) > int64(len(data)) {
		return fmt.Errorf("read %d+%d outside %s (%d bytes)", off, len(p), name, len(data))
	}
	f.reads = append(f.reads, fmt.Sprintf("%s@%d+%d", name, off, len(p)))
	copy(p, data[off:])
	return nil
}

// lister is a fake that lists its files.
type lister struct{ *fake }

func (l lister) Names() []string {
	var out []string
	for n := range l.files {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7>>3) ^ seed
	}
	return b
}

// readAt reads n bytes at off of name and checks them against the file.
func readAt(t *testing.T, fsys *RangeFS, r *fake, name string, off int64, n int) {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkAt(t, f.(io.ReaderAt), r.files[name], off, n)
}

func checkAt(t *testing.T, ra io.ReaderAt, data []byte, off int64, n int) {
	t.Helper()
	p := make([]byte, n)
	got, err := ra.ReadAt(p, off)
	want := min(int64(n), max(0, int64(len(data))-off))
	if int64(got) != want || (got < n && err != io.EOF) || (got == n && err != nil) {
		t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d", n, off, got, err, want)
	}
	if !bytes.Equal(p[:got], data[off:off+int64(got)]) {
		t.Fatalf("ReadAt(%d bytes at %d): wrong bytes", n, off)
	}
}

// TestRangeFSPreload: the one preload policy. A read wholly inside the
// file's span costs no read; a miss, or a read that overlaps the span only
// in part, is one read of exactly its bytes; a new span replaces the
// previous one, nil drops it, and a span serves only its own file.
func TestRangeFSPreload(t *testing.T) {
	r := &fake{files: map[string][]byte{"a.bin": pattern(1000, 1), "b.bin": pattern(1000, 2)}}
	fsys := NewRangeFS(r)
	f, err := fsys.Open("a.bin")
	if err != nil {
		t.Fatal(err)
	}
	ra := f.(io.ReaderAt)
	a := r.files["a.bin"]
	fsys.Preload("a.bin", 100, bytes.Clone(a[100:400]))
	steps := []struct {
		what      string
		off       int64
		n         int
		wantReads []string
	}{
		{"inside", 150, 100, nil},
		{"the whole span", 100, 300, nil},
		{"before it", 0, 50, []string{"a.bin@0+50"}},
		{"across its start", 90, 20, []string{"a.bin@90+20"}},
		{"across its end", 390, 20, []string{"a.bin@390+20"}},
		{"after it", 500, 10, []string{"a.bin@500+10"}},
		{"past the file's end", 990, 20, []string{"a.bin@990+10"}},
	}
	for _, s := range steps {
		r.reads = nil
		checkAt(t, ra, a, s.off, s.n)
		if !slices.Equal(r.reads, s.wantReads) {
			t.Errorf("%s: reads %v, want %v", s.what, r.reads, s.wantReads)
		}
	}
	// Another file's span.
	r.reads = nil
	readAt(t, fsys, r, "b.bin", 150, 100)
	if len(r.reads) != 1 {
		t.Errorf("a.bin's span served b.bin: reads %v", r.reads)
	}
	// A new span replaces the old one.
	fsys.Preload("a.bin", 600, bytes.Clone(a[600:700]))
	r.reads = nil
	checkAt(t, ra, a, 650, 10)
	checkAt(t, ra, a, 150, 10)
	if want := []string{"a.bin@150+10"}; !slices.Equal(r.reads, want) {
		t.Errorf("after a new span: reads %v, want %v", r.reads, want)
	}
	// nil drops it.
	fsys.Preload("a.bin", 0, nil)
	r.reads = nil
	checkAt(t, ra, a, 650, 10)
	if len(r.reads) != 1 {
		t.Errorf("a dropped span still served: reads %v", r.reads)
	}
	// Spans are the file system's: one opened later sees them too.
	fsys.Preload("./a.bin", 0, bytes.Clone(a[:100]))
	r.reads = nil
	readAt(t, fsys, r, "a.bin", 10, 10)
	if len(r.reads) != 0 {
		t.Errorf("a span by an unclean name not served: reads %v", r.reads)
	}
}

func TestSpans(t *testing.T) {
	var s Spans
	p := make([]byte, 4)
	if s.Fill("x", p, 0) {
		t.Error("the zero Spans served a read")
	}
	s.Put("x", 10, []byte("abcdefgh"))
	for _, c := range []struct {
		off int64
		n   int
		ok  bool
	}{{10, 4, true}, {14, 4, true}, {15, 4, false}, {9, 4, false}, {12, 0, true}, {18, 0, true}, {19, 0, false}} {
		if got := s.Fill("x", p[:c.n], c.off); got != c.ok {
			t.Errorf("Fill(%d bytes at %d) = %v, want %v", c.n, c.off, got, c.ok)
		}
	}
	s.Fill("x", p, 12)
	if string(p) != "cdef" {
		t.Errorf("Fill copied %q", p)
	}
}

// TestRangeFSHead: Open asks Probe for FirstChunk bytes and serves reads
// inside them with no read.
func TestRangeFSHead(t *testing.T) {
	r := &fake{files: map[string][]byte{"f": pattern(5000, 3)}}
	fsys := NewRangeFS(r)
	fsys.FirstChunk = 1024
	readAt(t, fsys, r, "f", 0, 1024)
	readAt(t, fsys, r, "f", 1000, 24)
	if len(r.reads) != 0 || r.probes != 2 {
		t.Errorf("inside the head: reads %v, %d probes", r.reads, r.probes)
	}
	readAt(t, fsys, r, "f", 1000, 25)
	if want := []string{"f@1000+25"}; !slices.Equal(r.reads, want) {
		t.Errorf("across the head's end: reads %v, want %v", r.reads, want)
	}
}

// TestRangeFSChunks: small reads go through aligned chunks, read once
// each; a read across a boundary takes both; the oldest of more than
// maxChunks is dropped; reads of at least Chunk bytes bypass them.
func TestRangeFSChunks(t *testing.T) {
	const chunk = 100
	r := &fake{files: map[string][]byte{"f": pattern(2050, 4)}}
	fsys := NewRangeFS(r)
	fsys.Chunk = chunk
	f, _ := fsys.Open("f")
	ra, data := f.(io.ReaderAt), r.files["f"]
	checkAt(t, ra, data, 10, 5)
	checkAt(t, ra, data, 50, 49)
	if want := []string{"f@0+100"}; !slices.Equal(r.reads, want) {
		t.Errorf("one chunk: reads %v, want %v", r.reads, want)
	}
	r.reads = nil
	checkAt(t, ra, data, 95, 10)
	if want := []string{"f@100+100"}; !slices.Equal(r.reads, want) {
		t.Errorf("across a boundary: reads %v, want %v", r.reads, want)
	}
	r.reads = nil
	checkAt(t, ra, data, 2040, 20) // the last, short chunk; io.EOF
	if want := []string{"f@2000+50"}; !slices.Equal(r.reads, want) {
		t.Errorf("the last chunk: reads %v, want %v", r.reads, want)
	}
	// Chunks 0, 1 and 20 are held; maxChunks-2 more make maxChunks+1:
	// chunk 0 goes.
	for c := int64(2); c < maxChunks; c++ {
		checkAt(t, ra, data, c*chunk, 1)
	}
	r.reads = nil
	checkAt(t, ra, data, 150, 1) // chunk 1: still there
	checkAt(t, ra, data, 0, 1)   // chunk 0: dropped
	if want := []string{"f@0+100"}; !slices.Equal(r.reads, want) {
		t.Errorf("after eviction: reads %v, want %v", r.reads, want)
	}
	r.reads = nil
	checkAt(t, ra, data, 300, chunk)
	if want := []string{"f@300+100"}; !slices.Equal(r.reads, want) {
		t.Errorf("a chunk-sized read: reads %v, want %v", r.reads, want)
	}
}

// TestRangeFSReadAhead: a large read fetches a ReadAhead window, and the
// reads inside it cost nothing; the next window replaces it.
func TestRangeFSReadAhead(t *testing.T) {
	r := &fake{files: map[string][]byte{"f": pattern(10000, 5)}}
	fsys := NewRangeFS(r)
	fsys.ReadAhead = 4000
	f, _ := fsys.Open("f")
	ra, data := f.(io.ReaderAt), r.files["f"]
	for off := int64(0); off < 10000; off += 1000 {
		checkAt(t, ra, data, off, 1000)
	}
	if want := []string{"f@0+4000", "f@4000+4000", "f@8000+2000"}; !slices.Equal(r.reads, want) {
		t.Errorf("reads %v, want %v", r.reads, want)
	}
	r.reads = nil
	checkAt(t, ra, data, 100, 4000) // not less than the window: as asked
	if want := []string{"f@100+4000"}; !slices.Equal(r.reads, want) {
		t.Errorf("a window-sized read: reads %v, want %v", r.reads, want)
	}
}

// TestRangeFSDirs: with a Lister, folders open and list the files directly
// in them (not their subfolders: as the browser's Files always did), and
// pass fstest.TestFS.
func TestRangeFSDirs(t *testing.T) {
	r := &fake{files: map[string][]byte{
		"adapter_config.json": []byte(`{"r": 8}`),
		"sub/a.bin":           pattern(300, 6),
		"sub/deeper/b.bin":    pattern(20, 7),
	}}
	fsys := NewRangeFS(lister{r})
	if err := fstest.TestFS(fsys, "adapter_config.json"); err != nil {
		t.Fatal(err)
	}
	for d, file := range map[string]string{"sub": "a.bin", "sub/deeper": "b.bin"} {
		sub, _ := fs.Sub(fsys, d)
		if err := fstest.TestFS(sub, file); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
	}
	ents, err := fs.ReadDir(fsys, "sub")
	if err != nil || len(ents) != 1 || ents[0].Name() != "a.bin" || ents[0].IsDir() {
		t.Errorf("ReadDir(sub): %v %v", ents, err)
	}
	if info, _ := ents[0].Info(); info.Size() != 300 {
		t.Errorf("a.bin's size in the listing: %d", info.Size())
	}
	if st, err := fs.Stat(fsys, "sub/a.bin"); err != nil || st.Size() != 300 || st.Name() != "a.bin" {
		t.Errorf("Stat: %v %v", st, err)
	}
	if _, err := fsys.Open("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := fsys.Open("../x"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("an invalid path: %v", err)
	}
	// Without a Lister there are files only.
	if _, err := NewRangeFS(r).Open("sub"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a folder with no Lister: %v", err)
	}
}

// countingRanger is one file whose reads take a while and are counted by
// offset (safe for concurrent use).
type countingRanger struct {
	data  []byte
	mu    sync.Mutex
	reads map[int64]int
}

func (c *countingRanger) Probe(_ context.Context, _ string, n int) (int64, []byte, error) {
	return int64(len(c.data)), bytes.Clone(c.data[:min(n, len(c.data))]), nil
}

func (c *countingRanger) ReadRange(_ context.Context, _ string, off int64, p []byte) error {
	time.Sleep(5 * time.Millisecond) // long enough for the others to ask meanwhile
	c.mu.Lock()
	c.reads[off]++
	c.mu.Unlock()
	copy(p, c.data[off:])
	return nil
}

// TestRangeFSChunksShared: the handles of a file share its chunks — eight
// workers each opening the file and reading the same small tensors cause
// one read per chunk, not one per worker (a small adapter came down once
// per worker) — and a chunk being read is waited for, not read again.
func TestRangeFSChunksShared(t *testing.T) {
	const chunk = 100
	r := &countingRanger{data: pattern(1000, 7), reads: map[int64]int{}}
	fsys := NewRangeFS(r)
	fsys.Chunk = chunk
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := fsys.Open("f")
			if err != nil {
				t.Error(err)
				return
			}
			for off := int64(0); off < 1000; off += 37 {
				checkAt(t, f.(io.ReaderAt), r.data, off, 20)
			}
		}()
	}
	wg.Wait()
	for c := int64(0); c < 1000; c += chunk {
		if n := r.reads[c]; n != 1 {
			t.Errorf("chunk at %d read %d times by 8 handles, want once", c, n)
		}
	}
}

// TestRangeFSView: a file serves a view (no copy, no read) of bytes its
// head or its handed-over span holds whole — the very bytes, not a copy
// of them — and none of bytes that straddle the span's edge, lie past the
// file, or belong to a span since dropped.
func TestRangeFSView(t *testing.T) {
	data := pattern(1<<20, 9)
	r := &fake{files: map[string][]byte{"w.bin": data}}
	fsys := NewRangeFS(r)
	fsys.FirstChunk = 1024
	f, err := fsys.Open("w.bin")
	if err != nil {
		t.Fatal(err)
	}
	v := f.(Viewer)
	span := bytes.Clone(data[4096 : 8192+4096])
	fsys.Preload("w.bin", 4096, span)
	reads := len(r.reads)
	for _, c := range []struct {
		off  int64
		n    int
		want bool
		src  []byte // what the view must alias
		at   int
	}{
		{0, 1024, true, nil, 0},     // the head
		{100, 900, true, nil, 100},  // inside the head
		{4096, 8192, true, span, 0}, // the span
		{5000, 100, true, span, 904},
		{4096 + 8192 - 1, 1, true, span, 8191},
		{4000, 200, false, nil, 0},        // across the span's start
		{4096 + 8000, 300, false, nil, 0}, // across its end
		{1000, 100, false, nil, 0},        // across the head's end
		{1<<20 - 10, 20, false, nil, 0},   // past the file
		{-1, 10, false, nil, 0},
		{20000, 10, false, nil, 0}, // nowhere held
	} {
		b, ok := v.View(c.off, c.n)
		if ok != c.want {
			t.Errorf("View(%d, %d): ok %v, want %v", c.off, c.n, ok, c.want)
			continue
		}
		if !ok {
			continue
		}
		if len(b) != c.n || !bytes.Equal(b, data[c.off:c.off+int64(c.n)]) {
			t.Errorf("View(%d, %d): wrong bytes", c.off, c.n)
		}
		if c.src != nil && &b[0] != &c.src[c.at] {
			t.Errorf("View(%d, %d): a copy, not the span's bytes", c.off, c.n)
		}
		if cap(b) != len(b) {
			t.Errorf("View(%d, %d): capacity %d reaches past the view", c.off, c.n, cap(b))
		}
	}
	if len(r.reads) != reads {
		t.Errorf("views read: %v", r.reads[reads:])
	}
	fsys.Preload("w.bin", 0, nil)
	if _, ok := v.View(5000, 100); ok {
		t.Error("a view of a dropped span")
	}
}
