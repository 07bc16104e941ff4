//go:build js && wasm

package worker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/browser"
)

// Picked files read once, for the pool and the digest. An audit of picked
// files with a pool hashes each file from the spans its dealer reads for
// the pool's workers: a worker copies a span into its memory and hands the
// buffer back (msg.Spent); the dealer offers it to the file's feed, which
// posts it to the digest worker in file order, and the digest worker hands
// it back to the dealer once hashed (postBuf's tag). The feed reads itself
// only what no span covers (the header, a gap between spans, a span a
// worker had to read itself, the tail once the pool is done), and a file no
// span covers is hashed whole by the digest worker (hashFile, its own
// reader). Read twice — the spans for the pool, the whole file again for
// the digest — the twin's quick audit of picked files took 11.0 s on a
// 2-core VM against 4.9 s without digests: the two reads of 1.40 GB and
// the hash shared two cores.
//
// The dealer's span reads wait while they would run more than feedAhead
// bytes ahead of the feed (fileFeed.gate): the spans that came before the
// one the feed waits for are held until it comes, and the digest (about
// 400 MB/s in wasm) may be slower than the scan, so that memory stays
// bounded.

// feedAhead bounds how far the dealer's reads run ahead of a feed (a
// variable for the tests; more than digestPiece). The bytes held for a
// file are then at most feedAhead, one span (up to 64 MiB) and what is
// posted to the digest worker and not yet hashed (digestInflight).
var feedAhead int64 = 160 << 20

// feedEarly is how much of a picked file its feed may read itself before
// the first span comes: the pool's workers take half a second or more to
// start and open the file, which the digest (the audit's slowest pass
// with digests: one SHA-256 stream) spends hashing the file's start
// instead. Those bytes are read twice (the spans of them still go to the
// workers); at most this many, and a quarter of the file.
const feedEarly = 256 << 20

// feedSpan is a span the dealer planned to read in a feed's file.
type feedSpan struct {
	begin, end int64
	buf        js.Value // its bytes, once a pool worker handed them back
	ready      bool
	gone       bool // it will not come (its read failed, the pool ended)
}

// feedDigest is what a feed needs of the digest worker (workerDigest;
// the tests' is crypto/sha256).
type feedDigest interface {
	open() int // a new hash
	// postBuf hashes n bytes of ab from at next into hash id (ab is
	// transferred; back, if not nil, gets it once hashed).
	postBuf(id int, ab js.Value, at, n int, back func(js.Value)) error
	sum(id int) ([]byte, error) // the digest of hash id, which is then dropped
	drop(id int)                // forget hash id (it failed)
	// whole hashes the whole of blob (its own reads), with the seconds it
	// took.
	whole(ctx context.Context, blob js.Value) ([]byte, float64, error)
	piece() js.Value // an ArrayBuffer of digestPiece bytes, reused if one is free
}

// workerDigest is the digest worker as a feedDigest.
type workerDigest struct {
	d        *digestWorker
	byReader *atomic.Int64 // files the worker's file reader read (hashFile)
}

func (w workerDigest) open() int {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	w.d.next++
	return w.d.next
}

func (w workerDigest) postBuf(id int, ab js.Value, at, n int, back func(js.Value)) error {
	return w.d.postBuf(id, ab, at, n, back)
}

func (w workerDigest) sum(id int) ([]byte, error) {
	defer w.d.ask(id, "drop")
	c, err := w.d.ask(id, "sum")
	if err != nil {
		return nil, err
	}
	return w.d.wait(id, c)
}

func (w workerDigest) drop(id int) { w.d.ask(id, "drop") }

func (w workerDigest) whole(ctx context.Context, blob js.Value) ([]byte, float64, error) {
	return w.d.hashFile(blob, fileChunk, w.byReader)(ctx)
}

func (w workerDigest) piece() js.Value { return w.d.piece() }

// blobReader reads bytes [from, to) of blob into into (clefcheckReadBlob,
// a BYOB read), resolving to the buffer that holds them.
func blobReader(blob js.Value) func(from, to int64, into js.Value) (js.Value, error) {
	return func(from, to int64, into js.Value) (js.Value, error) {
		r, err := browser.Await(js.Global().Call("clefcheckReadBlob", blob, float64(from), float64(to), into))
		if err != nil {
			return js.Undefined(), browser.BlobError(err, blob.Get("name").String())
		}
		if n := r.Get("n").Int(); int64(n) != to-from {
			return js.Undefined(), browser.ShortRead(blob.Get("name").String(), n, int(to-from), from)
		}
		return r.Get("buf"), nil
	}
}

// fileFeed hashes one picked file in the digest worker (see above).
type fileFeed struct {
	d      feedDigest
	blob   js.Value
	size   int64
	readAt func(from, to int64, into js.Value) (js.Value, error) // the file's bytes (blobReader)
	back   func(js.Value)                                        // where span buffers go once hashed (the dealer's)

	mu      sync.Mutex
	tick    chan struct{} // closed (and replaced) at every change
	planned bool
	spans   []*feedSpan // by begin, those not yet passed
	cursor  int64       // bytes posted to the digest worker
	closed  bool        // it takes no more spans (it failed, or hashes the file whole)
	offers  int         // spans offered
	// early is how many bytes the feed may read itself before the first
	// span comes (the pool's workers start meanwhile); those it reads
	// twice.
	early int64
	ended bool // no more spans will come (abandon)

	done      chan struct{}
	sum       []byte
	secs      float64
	err       error
	fromSpans int64 // bytes hashed from the pool's spans
	read      int64 // bytes the feed read itself
	whole     bool  // hashed whole by the digest worker (hashFile)
}

// newFeed starts the feed of a file of size bytes; it works within ctx
// (the job's) and waits for a plan (plan, abandon).
func newFeed(ctx context.Context, d feedDigest, blob js.Value, size int64, readAt func(from, to int64, into js.Value) (js.Value, error), back func(js.Value)) *fileFeed {
	f := &fileFeed{d: d, blob: blob, size: size, readAt: readAt, back: back, tick: make(chan struct{}), done: make(chan struct{})}
	go f.run(ctx)
	return f
}

// setEarly sets how many bytes the feed may read itself before the first
// span comes (0 by default).
func (f *fileFeed) setEarly(n int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.early = n
	f.changed()
}

// changed wakes every waiter; under f.mu.
func (f *fileFeed) changed() {
	close(f.tick)
	f.tick = make(chan struct{})
}

// await waits for a change (f.mu held, and held again on return).
func (f *fileFeed) await(ctx context.Context) error {
	t := f.tick
	f.mu.Unlock()
	defer f.mu.Lock()
	select {
	case <-t:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// plan says which spans the dealer will read (the first plan only).
func (f *fileFeed) plan(spans [][2]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.planned {
		return
	}
	f.planned = true
	for _, s := range spans {
		if s[0] < s[1] && s[1] <= f.size {
			f.spans = append(f.spans, &feedSpan{begin: s[0], end: s[1]})
		}
	}
	slices.SortStableFunc(f.spans, func(a, b *feedSpan) int { return cmp.Compare(a.begin, b.begin) })
	f.changed()
}

// offer hands the feed span [begin, end)'s bytes, in buf (an ArrayBuffer);
// false when the feed does not take them (the caller keeps the buffer).
func (f *fileFeed) offer(begin, end int64, buf js.Value) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	for _, s := range f.spans {
		if s.begin == begin && s.end == end && !s.ready && !s.gone {
			f.offers++
			if !buf.Truthy() || buf.Get("byteLength").Int() < int(end-begin) {
				s.gone = true // not its bytes: the feed reads them
			} else {
				s.buf, s.ready = buf, true
			}
			f.changed()
			return s.ready
		}
	}
	return false
}

// skip says span [begin, end) will not come (its read failed: a worker
// reads it itself).
func (f *fileFeed) skip(begin, end int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.spans {
		if s.begin == begin && s.end == end && !s.ready && !s.gone {
			s.gone = true
			break // one read failed: a twin span may still come
		}
	}
	f.changed()
}

// abandon says no more spans will come: the feed reads what the spans it
// has not got would have covered.
func (f *fileFeed) abandon() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.planned, f.ended = true, true
	for _, s := range f.spans {
		if !s.ready {
			s.gone = true
		}
	}
	f.changed()
}

// gate waits until a read starting at begin is within feedAhead of the
// feed (or the feed takes no more spans).
func (f *fileFeed) gate(ctx context.Context, begin int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for begin-f.cursor > feedAhead && !f.closed && !f.ended && f.cursor < f.size {
		if f.await(ctx) != nil {
			return
		}
	}
}

// wait is the file's digest and the seconds it took (runner.Host.HashFile):
// the spans that did not come by now will not come.
func (f *fileFeed) wait(ctx context.Context) ([]byte, float64, error) {
	f.abandon()
	select {
	case <-f.done:
		return f.sum, f.secs, f.err
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

func (f *fileFeed) run(ctx context.Context) {
	defer close(f.done)
	t0 := time.Now()
	id := f.d.open()
	err := f.feed(ctx, id)
	if err == errWhole {
		// No span came: the digest worker hashes the file whole, as it
		// does without a pool.
		f.whole = true
		f.sum, f.secs, f.err = f.d.whole(ctx, f.blob)
		return
	}
	if err == nil {
		f.sum, err = f.d.sum(id)
	} else {
		f.d.drop(id)
	}
	f.secs, f.err = time.Since(t0).Seconds(), err
	if err != nil {
		f.err = fmt.Errorf("the file's digest: %w", err)
	}
}

// errWhole: the feed got no span, and hashes the file whole instead.
var errWhole = fmt.Errorf("no span came")

// feed posts the file's bytes in order: each span once it came, the bytes
// no span covers read here once the span after them came (or none is
// left to come).
func (f *fileFeed) feed(ctx context.Context, id int) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer func() { // under f.mu
		if err != nil {
			// It takes no more spans; those it holds go back.
			f.closed = true
			for _, sp := range f.spans {
				if sp.ready {
					f.back(sp.buf)
				}
			}
			f.spans = nil
			f.changed()
		}
	}()
	for f.cursor < f.size {
		if !f.planned {
			if err := f.await(ctx); err != nil {
				return err
			}
			continue
		}
		// The first span still to come past the cursor; those behind it
		// (wholly hashed already, or gone) are let go.
		var s *feedSpan
		keep := f.spans[:0]
		for _, sp := range f.spans {
			switch {
			case sp.end <= f.cursor || sp.gone:
				if sp.ready {
					f.back(sp.buf)
				}
			default:
				keep = append(keep, sp)
				if s == nil {
					s = sp
				}
			}
		}
		clear(f.spans[len(keep):])
		f.spans = keep
		early := f.offers == 0 && f.cursor < f.early // no span came yet: read on meanwhile
		if s != nil && !s.ready && s.begin-f.cursor <= digestPiece && !early {
			// Wait for it (a small gap before it, such as the header, is
			// read once it came: if no span comes at all, the file is
			// hashed whole instead). A wider gap is read now: the span
			// after it may be waiting (gate) for the feed to come near.
			if err := f.await(ctx); err != nil {
				return err
			}
			continue
		}
		if s == nil && f.cursor == 0 && f.fromSpans == 0 && f.blob.Truthy() {
			return errWhole // a URL's file (no blob) is read here, piece by piece
		}
		from := f.cursor
		if s != nil && s.ready && s.begin <= from {
			// The span at the cursor: its bytes from there.
			f.spans = slices.DeleteFunc(f.spans, func(sp *feedSpan) bool { return sp == s })
			f.mu.Unlock()
			err = f.d.postBuf(id, s.buf, int(from-s.begin), int(s.end-from), f.back)
			f.mu.Lock()
			f.fromSpans += s.end - from
			f.cursor = s.end
		} else {
			// Bytes no span covers, up to the next span (or those of the
			// span at the cursor, read before any span came: early).
			to := f.size
			switch {
			case s != nil && s.begin > from:
				to = s.begin
			case s != nil:
				to = s.end
			}
			to = min(to, from+digestPiece)
			if early && s != nil && s.begin <= from {
				to = min(to, max(from+1, f.early))
			}
			f.mu.Unlock()
			err = f.readPiece(id, from, to)
			f.mu.Lock()
			f.read += to - from
			f.cursor = to
		}
		f.changed()
		if err != nil {
			return err
		}
	}
	for _, sp := range f.spans {
		if sp.ready {
			f.back(sp.buf)
		}
	}
	f.spans = nil
	return nil
}

// readPiece reads bytes [from, to) of the file (at most digestPiece) and
// posts them to hash id.
func (f *fileFeed) readPiece(id int, from, to int64) error {
	buf, err := f.readAt(from, to, f.d.piece())
	if err != nil {
		return err
	}
	return f.d.postBuf(id, buf, 0, int(to-from), nil)
}

// postBuf sends n bytes of ab from at (transferred) to hash id, first
// waiting for room in flight; the buffer comes back to back with the ack
// (without back, it is kept for the next pieces if it is of their size).
func (d *digestWorker) postBuf(id int, ab js.Value, at, n int, back func(js.Value)) error {
	if err := d.reserve(int64(n)); err != nil {
		return err
	}
	m := map[string]any{"id": id, "buf": ab, "at": at, "n": n}
	tag := 0
	if back != nil {
		d.mu.Lock()
		d.tags++
		tag = d.tags
		if d.backs == nil {
			d.backs = map[int]func(js.Value){}
		}
		d.backs[tag] = back
		m["tag"] = tag
		d.mu.Unlock()
	}
	err := jsCall(func() { d.w.Call("postMessage", m, []any{ab}) })
	if err != nil { // not posted: no ack comes
		d.mu.Lock()
		delete(d.backs, tag)
		d.inflight -= int64(n)
		d.mu.Unlock()
	}
	return err
}

// Feeds: the dealer's side.

// feedFor is the feed of the picked file name for this pool, started now
// (HashFile asks it when the file is opened, before the dealer plans). A
// file opened once the dealer has planned gets no span: it is hashed
// whole.
func (p *AuditPool) feedFor(ctx context.Context, d *digestWorker, name string, byReader *atomic.Int64) *fileFeed {
	if p.Files == nil || p.Files.Observed() {
		return nil
	}
	blob := p.Files.Value(name)
	if !blob.Truthy() {
		return nil
	}
	f := newFeed(ctx, workerDigest{d, byReader}, blob, int64(blob.Get("size").Float()), blobReader(blob), p.keepSpent)
	f.setEarly(min(feedEarly, f.size/4))
	p.addFeed(name, f)
	return f
}

// digests is the digest worker once its hashes are runner.SHA256's: a
// URL's feed posts the spans to it (urlFeed).
var digests atomic.Pointer[digestWorker]

// urlFeed is the feed of file name (size bytes) of the pool's URL: the
// digest worker hashes the spans the dealer fetches for the workers, and
// the feed fetches itself only what no span covers (the header, the tail,
// a span a worker had to read itself) — the file crosses the network once
// and the engine worker's Go memory not at all. Unlike a picked file's,
// it reads nothing before the first span comes (that would be read twice
// over the network). A URL file the cache keeps has none: its bytes pass
// through Go to be kept, and are hashed there as they pass.
func (p *AuditPool) urlFeed(ctx context.Context, d *digestWorker, name string, size int64) *fileFeed {
	if p.Src == nil || p.Src.Keeps(name) || size <= 0 {
		return nil
	}
	read := func(from, to int64, into js.Value) (js.Value, error) {
		return p.fetchRange(ctx, name, from, to, into)
	}
	f := newFeed(ctx, workerDigest{d, nil}, js.Undefined(), size, read, p.keepSpent)
	p.addFeed(name, f)
	return f
}

// addFeed makes f the feed of file name (one opened once the dealer has
// planned gets no span).
func (p *AuditPool) addFeed(name string, f *fileFeed) {
	p.feedMu.Lock()
	if p.feeds == nil {
		p.feeds = map[string]*fileFeed{}
	}
	if old := p.feeds[name]; old != nil {
		old.abandon()
	}
	p.feeds[name] = f
	planned := p.planned
	p.feedMu.Unlock()
	if planned {
		f.abandon()
	}
}

// hasFeeds tells whether any picked file is hashed from the spans.
func (p *AuditPool) hasFeeds() bool {
	p.feedMu.Lock()
	defer p.feedMu.Unlock()
	return len(p.feeds) > 0
}

// skipFeed: span [begin, end) of file will not come to its feed.
func (p *AuditPool) skipFeed(file string, begin, end int64) {
	if f := p.feed(file); f != nil {
		f.skip(begin, end)
	}
}

// feed is file's feed (nil: none).
func (p *AuditPool) feed(file string) *fileFeed {
	p.feedMu.Lock()
	defer p.feedMu.Unlock()
	return p.feeds[file]
}

// planFeeds tells every feed the spans the dealer will read in its file.
func (p *AuditPool) planFeeds(spans map[string][][2]int64) {
	p.feedMu.Lock()
	p.planned = true
	feeds := make(map[string]*fileFeed, len(p.feeds))
	for k, v := range p.feeds {
		feeds[k] = v
	}
	p.feedMu.Unlock()
	for name, f := range feeds {
		f.plan(spans[name])
	}
}

// abandonFeeds: the pool is done; no span comes any more.
func (p *AuditPool) abandonFeeds() {
	p.feedMu.Lock()
	defer p.feedMu.Unlock()
	for _, f := range p.feeds {
		f.abandon()
	}
}

// FeedFigures is what the pool's feeds hashed: files hashed from the
// spans (and the bytes that took from them, and read for the digest
// alone), files hashed whole by the digest worker.
func (p *AuditPool) FeedFigures() (fed int, fromSpans, read int64, whole int) {
	p.feedMu.Lock()
	defer p.feedMu.Unlock()
	for _, f := range p.feeds {
		select {
		case <-f.done:
		default:
			continue
		}
		if f.whole {
			whole++
			continue
		}
		fed++
		fromSpans += f.fromSpans
		read += f.read
	}
	return fed, fromSpans, read, whole
}
