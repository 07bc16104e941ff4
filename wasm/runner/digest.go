package runner

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
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
//
// With a window (Host.DigestWindow: the browser's engine worker), it also
// takes every range the input's source reads (source.RangeFS.Observe) —
// the spans the audit's dealer fetches for the pool workers, in file
// order — holding up to window bytes that came early until those before
// them have passed: Finish then reads again only what nobody read here.
// A range that does not fit is dropped and read again as soon as its turn
// comes (tracker.fill), so that one slow range costs its own bytes, not
// every range after it.
//
// With waits (natively from a URL), the check's workers read the file in
// file order between them (audit.Options.InFileOrder), and one whose range
// comes early waits, its bytes in its own buffer, until those before it
// have passed, then hashes them: no window, no copy, and nothing read
// again (see tracker.saw).
type digestFS struct {
	fs.FS
	mu     sync.Mutex
	files  map[string]*tracker
	window int64
	early  map[string][]byte // the first bytes of files being opened
	waits  bool              // see above
	// hashFile hashes a whole file elsewhere (Host.HashFile).
	hashFile func(fs.FS, string, int64) (func(context.Context) (sum []byte, seconds float64, err error), bool)
}

func newDigestFS(fsys fs.FS, window int64) *digestFS {
	d := &digestFS{FS: fsys, files: map[string]*tracker{}, window: max(0, window)}
	if o, ok := fsys.(interface {
		Observe(func(name string, off int64, b []byte))
	}); ok && window > 0 {
		o.Observe(d.observe)
	}
	return d
}

// observe takes a range the source read (for this check or another). The
// first bytes of a file not yet opened here (the probe of its Open) are
// kept for its tracker.
func (d *digestFS) observe(name string, off int64, b []byte) {
	d.mu.Lock()
	t := d.files[name]
	if t == nil && off == 0 && len(b) <= maxEarly {
		if d.early == nil {
			d.early = map[string][]byte{}
		}
		d.early[name] = append([]byte(nil), b...)
	}
	d.mu.Unlock()
	if t != nil {
		t.saw(b, off, false)
	}
}

// maxEarly bounds the first bytes kept for a file about to be opened.
const maxEarly = 1 << 20

// tracker hashes one file's bytes in order.
type tracker struct {
	mu        sync.Mutex
	h         hash.Hash
	next      atomic.Int64 // bytes hashed so far
	size      int64
	ns        atomic.Int64 // time spent hashing as the bytes passed
	window    int64        // bytes that may wait in pending
	pending   []chunk      // early ranges, by offset, copied
	held      int64
	spare     [][]byte                                                       // the buffers of held ranges since hashed, for the next (see hold)
	heldCap   int64                                                          // the pending ranges' buffers' capacities (held counts their bytes)
	finishing atomic.Bool                                                    // Finish reads: what passes now is its own
	ahead     chan struct{}                                                  // closed when the read-ahead hasher is done (nil: none)
	whole     func(context.Context) (sum []byte, seconds float64, err error) // the file hashed elsewhere (Host.HashFile)

	// Gaps read for the digest alone (with a window; see fill, readGap).
	fsys     fs.FS
	name     string
	waits    bool         // the check's own reads wait for room (see saw)
	room     *sync.Cond   // on mu: next moved, or a read in flight ended
	inflight []span       // the check's reads under way (with waits)
	dropped  []span       // early ranges that did not fit, by offset
	late     int64        // a range did not fit: the gap before the held ones, to here, is late
	filling  bool         // fill is at work
	fillErr  bool         // a gap's read failed: Finish reads (and reports) the rest
	bufs     [][]byte     // fillChunk buffers for the gaps' reads
	gapOnce  sync.Once    // opens gapFile
	gapFile  *source.File // the gaps' reads' own handle
	gapErr   error
	reread   atomic.Int64 // bytes the gaps' reads read
}

func newTracker(h hash.Hash, size, window int64, fsys fs.FS, name string, waits bool) *tracker {
	t := &tracker{h: h, size: size, window: window, fsys: fsys, name: name, waits: waits}
	t.room = sync.NewCond(&t.mu)
	return t
}

// fillChunk is the most a fill reads at a time (one Range request).
const fillChunk = 4 << 20

// Read-ahead hashing. A local file (an *os.File, or a file of an FS whose
// LocalFiles says so: the browser's Files) of at least aheadMin bytes,
// with no window, is hashed from the start of the check by a goroutine of
// its own reading it in order (aheadChunk bytes at a time, from the page
// cache), beside the check's workers instead of after them: a deep audit
// reads its pairs out of order, so that Finish would otherwise read and hash
// the whole file again, on one core, once the check is done. The bytes the
// check reads in order still count when they come first.
var aheadChunk = 4 << 20

// SetReadAheadChunk sets how many bytes the read-ahead digest reads at a
// time (4 MiB by default). The browser's engine worker reads 16 MiB: each
// read of a picked File is a round trip through JavaScript, and with 4 MiB
// the twin's quick audit from local files took 14.3 s against 10.7 s.
func SetReadAheadChunk(n int) {
	if n >= 64<<10 {
		aheadChunk = n
	}
}

var aheadMin int64 = 64 << 20 // a variable for the tests

// readerAtCloser is the read-ahead hasher's own handle on a file.
type readerAtCloser interface {
	io.ReaderAt
	io.Closer
}

// readAhead hashes the file from r to its end (started by Open).
func (t *tracker) readAhead(r readerAtCloser) {
	defer close(t.ahead)
	defer r.Close()
	buf := make([]byte, aheadChunk)
	for {
		off := t.next.Load()
		if off >= t.size || t.finishing.Load() {
			return
		}
		k := int(min(int64(len(buf)), t.size-off))
		n, err := r.ReadAt(buf[:k], off)
		if n < k && err != nil {
			return // Finish reads it again and reports the error
		}
		t.mu.Lock()
		if next := t.next.Load(); next >= off && next < off+int64(k) && !t.finishing.Load() {
			t0 := time.Now()
			t.h.Write(buf[next-off : k])
			t.next.Store(off + int64(k))
			t.drain()
			t.ns.Add(int64(time.Since(t0)))
		}
		t.mu.Unlock()
	}
}

// chunk is bytes [off, off+len(b)) of a file.
type chunk struct {
	off int64
	b   []byte
}

// saw takes bytes [off, off+len(b)) read by the check (own: through one
// of its files, the read in flight until it returns) or by its source.
//
// An early range that does not fit the window is dropped and read again in
// its turn (see fill) — except, with waits, the check's own: its reader
// waits for the ranges before it (the others' reads, under way or about
// to be), then hashes its own. Workers that read a pair each, in file
// order, wait little: the one before has read at the same time. A gap
// nobody has read for gapWait while no read under way has it — bytes no
// worker reads, or a worker that failed — the waiting reader reads itself.
// (A shorter wait would read again what a worker busy computing is about
// to read: its next chunk is nobody's read until it asks for it.)
func (t *tracker) saw(b []byte, off int64, own bool) {
	end := off + int64(len(b))
	if len(b) == 0 || t.whole != nil || end <= t.next.Load() || t.finishing.Load() || (off > t.next.Load() && t.window == 0 && !t.waits) {
		return // out of order: Finish reads it again
	}
	if t.ahead != nil {
		if !t.mu.TryLock() {
			return // the read-ahead hasher is at it: it reads these itself
		}
	} else {
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	var stuck struct { // since when next has not moved with nobody reading it
		at    int64
		since time.Time
		timer *time.Timer
	}
	defer func() {
		if stuck.timer != nil {
			stuck.timer.Stop()
		}
	}()
	for {
		next := t.next.Load()
		switch {
		case t.finishing.Load() || end <= next:
		case off <= next:
			t0 := time.Now()
			t.h.Write(b[next-off:])
			t.next.Store(end)
			t.drain()
			t.ns.Add(int64(time.Since(t0)))
		case t.hold(b, off):
		case !own && t.waits:
			// The read of the check's that brought it follows.
		case !own || !t.waits || t.fillErr:
			t.drop(off, end)
		case t.inFlight(next):
			stuck.since = time.Time{}
			t.room.Wait()
			continue
		case stuck.since.IsZero() || stuck.at != next:
			stuck.at, stuck.since = next, time.Now()
			if stuck.timer == nil {
				stuck.timer = time.AfterFunc(gapWait, t.wake)
			} else {
				stuck.timer.Reset(gapWait)
			}
			t.room.Wait()
			continue
		case time.Since(stuck.since) < gapWait:
			t.room.Wait()
			continue
		default:
			t.readGap(next, t.gapEnd(next))
			stuck.since = time.Time{}
			continue
		}
		break
	}
	if t.window > 0 && !t.waits && !t.filling && !t.fillErr && !t.finishing.Load() {
		t.fill()
	}
}

// hold keeps a copy of an early range if the window has room, and says
// whether it is held (t.mu held).
func (t *tracker) hold(b []byte, off int64) bool {
	end := off + int64(len(b))
	i := 0
	for ; i < len(t.pending) && t.pending[i].off <= off; i++ {
		if c := t.pending[i]; c.off+int64(len(c.b)) >= end {
			return true // held already
		}
	}
	i0 := t.spareIndex(len(b))
	c := spareCap(len(b))
	if i0 >= 0 {
		c = cap(t.spare[i0])
	}
	if t.held+int64(len(b)) > t.window {
		return false
	}
	var buf []byte
	if i0 >= 0 {
		buf = t.spare[i0][:0]
		t.spare = append(t.spare[:i0], t.spare[i0+1:]...)
	} else {
		// A new buffer: spares that fit no range of this size go first,
		// so that the buffers stay within the window and spareSlack.
		for len(t.spare) > 0 && t.buffered()+int64(c) > t.window+spareSlack {
			t.spare = t.spare[1:]
		}
		buf = make([]byte, 0, c)
	}
	t.pending = append(t.pending, chunk{})
	copy(t.pending[i+1:], t.pending[i:])
	t.pending[i] = chunk{off, append(buf, b...)}
	t.held += int64(len(b))
	t.heldCap += int64(c)
	return true
}

// The window's copies reuse the buffers of ranges already hashed instead
// of allocating (and leaving to the collector) one per early range — in
// the browser, where a WebAssembly memory never shrinks, that churn is
// what the tab keeps. The window's room is counted in bytes held, as
// before; its buffers, held and spare, by capacity, which never passes the
// window by more than spareSlack.

// spareIndex is the spare buffer to copy n bytes into (the smallest that
// fits, and no more than spareStep over), or -1.
func (t *tracker) spareIndex(n int) int {
	best := -1
	for i, s := range t.spare {
		if c := cap(s); c >= n && c < n+spareStep && (best < 0 || c < cap(t.spare[best])) {
			best = i
		}
	}
	return best
}

// spareCap is the capacity of a new buffer for n bytes: ranges of a few
// MiB and more are rounded up, so that ranges of nearby sizes (the spans)
// fit each other's buffers; smaller ones are not.
func spareCap(n int) int {
	if n < spareStep {
		return n
	}
	return (n + spareStep - 1) / spareStep * spareStep
}

const spareStep = 4 << 20

// spareSlack is how far the window's buffers may exceed it: a buffer is at
// most spareStep larger than the range in it.
const spareSlack = 8 * spareStep

// keep takes back a held range's buffer once it is hashed, while the
// window's buffers, held and spare, stay within the window (t.mu held).
func (t *tracker) keep(b []byte) {
	if t.buffered()+int64(cap(b)) <= t.window+spareSlack {
		t.spare = append(t.spare, b)
	}
}

// buffered is the capacity of the window's buffers, held and spare.
func (t *tracker) buffered() int64 {
	n := t.heldCap
	for _, s := range t.spare {
		n += int64(cap(s))
	}
	return n
}

// drain hashes the held ranges that are now next, and wakes the readers
// waiting for room (t.mu held).
func (t *tracker) drain() {
	defer t.room.Broadcast()
	for len(t.pending) > 0 && t.pending[0].off <= t.next.Load() {
		c := t.pending[0]
		t.pending, t.held, t.heldCap = t.pending[1:], t.held-int64(len(c.b)), t.heldCap-int64(cap(c.b))
		if next, end := t.next.Load(), c.off+int64(len(c.b)); end > next {
			t.h.Write(c.b[next-c.off:])
			t.next.Store(end)
		}
		t.keep(c.b)
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
		t = newTracker(SHA256.Get()(), size, d.window, d.FS, name, d.waits)
		d.files[name] = t
	}
	head := d.early[name]
	delete(d.early, name)
	_, osFile := f.(*os.File)
	local := osFile || localFiles(d.FS)
	var own readerAtCloser // the hasher's own handle: the check closes its own when done
	if t.ahead == nil && t.whole == nil && d.hashFile != nil && t.next.Load() == 0 {
		// Hashed whole elsewhere, of any size (the host says which files):
		// nothing here for the check to wait for.
		if w, ok := d.hashFile(d.FS, name, size); ok {
			t.whole = w
		}
	}
	if t.ahead == nil && t.whole == nil && local && d.window == 0 && size >= aheadMin {
		if g, err := d.FS.Open(name); err == nil {
			if ra, ok := g.(readerAtCloser); ok {
				own = ra
				t.ahead = make(chan struct{})
			} else {
				g.Close()
			}
		}
	}
	d.mu.Unlock()
	t.saw(head, 0, false)
	if own != nil {
		go t.readAhead(own)
	}
	return &trackedFile{File: f, ra: ra, t: t, size: size}, nil
}

// Reserved is audit.Options.Reserved: while a read-ahead hasher is at
// work, the channel closed when it is done (one SHA-256 stream keeps a
// core to itself); nil when none is.
func (d *digestFS) Reserved() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range d.files {
		if t.ahead == nil {
			continue
		}
		select {
		case <-t.ahead:
		default:
			return t.ahead
		}
	}
	return nil
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
	if f.t.waits {
		f.t.begin(off, off+int64(len(p)))
		defer f.t.end(off, off+int64(len(p)))
	}
	n, err := f.ra.ReadAt(p, off)
	f.t.saw(p[:n], off, true)
	return n, err
}

func (f *trackedFile) Size() int64 { return f.size }

// Finish completes every opened file's digest, reading in order what the
// check did not read in order (or its source for others), and returns the
// files sorted by name.
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
		if t.whole != nil {
			s, secs, err := t.whole(ctx)
			if err == nil && len(s) != t.h.Size() {
				err = fmt.Errorf("a digest of %d bytes", len(s))
			}
			if err != nil {
				return nil, sum, fmt.Errorf("%s: %w", n, err)
			}
			sum.Bytes += t.size
			sum.Seconds += secs
			out = append(out, report.FileInfo{Name: n, Size: t.size, SHA256: hex.EncodeToString(s)})
			continue
		}
		if t.ahead != nil {
			select { // the read-ahead hasher finishes the file
			case <-t.ahead:
			case <-ctx.Done():
			}
		}
		t.finishing.Store(true)
		t.mu.Lock()
		t.room.Broadcast()
		t.gapOnce.Do(func() {}) // a gap's open is over; none after this
		if t.gapFile != nil {
			t.gapFile.Close()
		}
		reread, err := t.finish(ctx, d.FS, n, buf)
		sum.Reread += reread + t.reread.Load()
		if err != nil {
			t.mu.Unlock()
			return nil, sum, err
		}
		sum.Bytes += t.size
		sum.Seconds += time.Duration(t.ns.Load()).Seconds()
		digest := t.h.Sum(nil)
		if e, ok := t.h.(interface{ Err() error }); ok && e.Err() != nil || len(digest) != t.h.Size() {
			// A hash computed elsewhere (the browser's digest worker)
			// that failed: no digest, rather than a wrong one.
			t.mu.Unlock()
			err := errors.New("the hash gave no digest")
			if ok {
				err = e.Err()
			}
			return nil, sum, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, report.FileInfo{Name: n, Size: t.size, SHA256: hex.EncodeToString(digest)})
		t.mu.Unlock()
	}
	sum.Seconds += time.Since(start).Seconds()
	return out, sum, nil
}

// finish hashes what is left of the file: the held ranges, and the gaps
// before them and at the end read from fsys; it returns the bytes read
// (t.mu held).
func (t *tracker) finish(ctx context.Context, fsys fs.FS, name string, buf []byte) (int64, error) {
	var reread int64
	var f *source.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	upTo := func(to int64) error { // read and hash [next, to)
		for off := t.next.Load(); off < to; {
			if err := ctx.Err(); err != nil {
				return err
			}
			if f == nil {
				var err error
				if f, err = source.Open(fsys, name); err != nil {
					return err
				}
			}
			k := int(min(int64(len(buf)), to-off))
			if _, err := f.ReadAt(buf[:k], off); err != nil && !(err == io.EOF && off+int64(k) == t.size) {
				return err
			}
			t.h.Write(buf[:k])
			off += int64(k)
			reread += int64(k)
			t.next.Store(off)
		}
		return nil
	}
	for len(t.pending) > 0 {
		if err := upTo(t.pending[0].off); err != nil {
			return reread, err
		}
		t.drain()
	}
	return reread, upTo(t.size)
}

// localFiles tells whether fsys's files are local (cheap to read twice):
// it says so with a LocalFiles method (the browser's picked Files).
func localFiles(fsys fs.FS) bool {
	l, ok := fsys.(interface{ LocalFiles() bool })
	return ok && l.LocalFiles()
}
