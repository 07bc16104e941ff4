//go:build js && wasm

package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"math/rand/v2"
	"sync"
	"syscall/js"
	"testing"
	"time"
)

// testDigest is a feedDigest computed here with crypto/sha256, in the
// order the bytes are posted, each buffer handed back a moment later (as
// the digest worker's ack does).
type testDigest struct {
	mu     sync.Mutex
	data   []byte // the whole file, to hash whole
	hashes map[int]hash.Hash
	ids    int
	wholes int
	back   sync.WaitGroup
}

func (d *testDigest) open() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids++
	if d.hashes == nil {
		d.hashes = map[int]hash.Hash{}
	}
	d.hashes[d.ids] = sha256.New()
	return d.ids
}

func (d *testDigest) postBuf(id int, ab js.Value, at, n int, back func(js.Value)) error {
	b := make([]byte, n)
	js.CopyBytesToGo(b, js.Global().Get("Uint8Array").New(ab, at, n))
	d.mu.Lock()
	d.hashes[id].Write(b)
	d.mu.Unlock()
	if back != nil {
		d.back.Add(1)
		go func() { defer d.back.Done(); time.Sleep(time.Millisecond); back(ab) }()
	}
	return nil
}

func (d *testDigest) sum(id int) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.hashes[id].Sum(nil)
	delete(d.hashes, id)
	return s, nil
}

func (d *testDigest) drop(id int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.hashes, id)
}

func (d *testDigest) whole(ctx context.Context, blob js.Value) ([]byte, float64, error) {
	d.mu.Lock()
	d.wholes++
	d.mu.Unlock()
	s := sha256.Sum256(d.data)
	return s[:], 0.001, nil
}

func (d *testDigest) piece() js.Value { return js.Global().Get("ArrayBuffer").New(digestPiece) }

// arrayOf is b[from:to] in an ArrayBuffer.
func arrayOf(b []byte) js.Value {
	ab := js.Global().Get("ArrayBuffer").New(len(b))
	js.CopyBytesToJS(js.Global().Get("Uint8Array").New(ab), b)
	return ab
}

// feedCase runs a feed over data with the spans planned, offering those
// that come (in a shuffled order, each from a goroutine of its own, with a
// gate first as the dealer does), skipping the others, then waiting.
type feedCase struct {
	name  string
	size  int
	spans [][2]int64
	come  func(i int) bool // span i's bytes come (else it is skipped)
	bad   func(i int) bool // span i comes in a buffer too short for it
	stop  int              // after this many spans the pool ends (0: never)
	fail  int64            // a read of the file at or past this offset fails (0: none)
	early int64            // the feed reads this much itself before the first span comes
	url   bool             // a URL's file (no blob: never hashed whole by the digest worker)
}

func runFeed(t *testing.T, c feedCase) (f *fileFeed, d *testDigest, sum []byte, err error, want [32]byte) {
	data := make([]byte, c.size)
	r := rand.New(rand.NewPCG(uint64(c.size), 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	want = sha256.Sum256(data)
	d = &testDigest{data: data}
	var backs sync.Mutex
	returned := 0
	read := func(from, to int64, into js.Value) (js.Value, error) {
		if c.fail > 0 && to > c.fail {
			return js.Undefined(), errors.New("the read failed")
		}
		js.CopyBytesToJS(js.Global().Get("Uint8Array").New(into, 0, int(to-from)), data[from:to])
		return into, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	blob := js.Global().Get("Object").New() // a picked File (testDigest.whole hashes data)
	if c.url {
		blob = js.Undefined()
	}
	f = newFeed(ctx, d, blob, int64(c.size), read, func(js.Value) { backs.Lock(); returned++; backs.Unlock() })
	f.setEarly(c.early)
	f.plan(c.spans)
	order := r.Perm(len(c.spans))
	var wg sync.WaitGroup
	for k, i := range order {
		if c.stop > 0 && k >= c.stop {
			break
		}
		s := c.spans[i]
		if c.come != nil && !c.come(i) {
			f.skip(s[0], s[1])
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.gate(ctx, s[0])
			b := data[s[0]:s[1]]
			if c.bad != nil && c.bad(i) {
				b = b[:len(b)/2]
			}
			ab := arrayOf(b)
			if !f.offer(s[0], s[1], ab) {
				backs.Lock()
				returned++ // kept by the caller
				backs.Unlock()
			}
		}()
		if k%3 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	if c.stop == 0 {
		wg.Wait()
	}
	sum, _, err = f.wait(ctx)
	wg.Wait()
	d.back.Wait()
	backs.Lock()
	defer backs.Unlock()
	if err == nil && !f.whole {
		// Every span that came went back to the dealer: hashed and handed
		// back, or not taken.
		came := 0
		for k, i := range order {
			if (c.stop == 0 || k < c.stop) && (c.come == nil || c.come(i)) {
				came++
			}
		}
		if returned != came {
			t.Errorf("%s: %d span buffers back, %d came", c.name, returned, came)
		}
	}
	return f, d, sum, err, want
}

// tiled is spans of step bytes from first to end, each starting where the
// one before ended.
func tiled(first, end, step int64) [][2]int64 {
	var s [][2]int64
	for b := first; b < end; b += step {
		s = append(s, [2]int64{b, min(end, b+step)})
	}
	return s
}

// TestFeed: a file's digest from the spans the dealer read, offered in any
// order, equals crypto/sha256 of the whole file, and the feed reads itself
// exactly the bytes no span that came covers; a file no span covers is
// hashed whole; a read that fails gives an error, never a digest.
func TestFeed(t *testing.T) {
	const mb = 1 << 20
	defer func(a int64) { feedAhead = a }(feedAhead)
	feedAhead = 12 * mb // the reads gated as the dealer's are
	overlapping := append(tiled(4096, 30*mb, 3*mb), [2]int64{5 * mb, 9 * mb}, [2]int64{29 * mb, 30*mb + 100})
	for _, c := range []struct {
		feedCase
		alone int64 // bytes the feed reads itself
		most  int64 // at most (with alone -1)
		whole bool
	}{
		{feedCase: feedCase{name: "tiled, a header and a tail", size: 40*mb + 77, spans: tiled(4096, 40*mb, 2*mb)}, alone: 4096 + 77},
		{feedCase: feedCase{name: "gaps wider than a piece", size: 60 * mb, spans: [][2]int64{{mb, 3 * mb}, {20 * mb, 21 * mb}, {21 * mb, 40 * mb}}}, alone: 60*mb - 22*mb},
		{feedCase: feedCase{name: "overlapping spans", size: 31 * mb, spans: overlapping}, alone: 4096 + mb - 100},
		{feedCase: feedCase{name: "some spans skipped", size: 20 * mb, spans: tiled(0, 20*mb, mb), come: func(i int) bool { return i%4 != 1 }}, alone: 5 * mb},
		{feedCase: feedCase{name: "a buffer too short", size: 8 * mb, spans: tiled(0, 8*mb, mb), bad: func(i int) bool { return i == 3 }}, alone: mb},
		{feedCase: feedCase{name: "the pool ends early", size: 16 * mb, spans: tiled(100, 16*mb, mb), stop: 5}, alone: -1},
		{feedCase: feedCase{name: "a gap wider than the reads may run ahead", size: 40 * mb, spans: [][2]int64{{mb, 2 * mb}, {30 * mb, 32 * mb}, {32 * mb, 34 * mb}}}, alone: 40*mb - 5*mb},
		{feedCase: feedCase{name: "read early, before the first span came", size: 30*mb + 5, spans: tiled(1000, 30*mb, 2*mb), early: 9 * mb}, alone: -1, most: 9*mb + 5},
		{feedCase: feedCase{name: "read early, one span", size: 4 * mb, spans: [][2]int64{{1000, 4 * mb}}, early: mb}, alone: -1, most: mb},
		{feedCase: feedCase{name: "no span", size: 3 * mb}, whole: true},
		{feedCase: feedCase{name: "no span came", size: 3 * mb, spans: tiled(0, 3*mb, mb), come: func(int) bool { return false }}, whole: true},
		// A URL's file: the same, but what no span covers is fetched by
		// the feed, piece by piece (no blob to hash whole).
		{feedCase: feedCase{name: "URL: tiled, a header and a tail", size: 40*mb + 77, spans: tiled(4096, 40*mb, 2*mb), url: true}, alone: 4096 + 77},
		{feedCase: feedCase{name: "URL: some spans skipped", size: 20 * mb, spans: tiled(0, 20*mb, mb), come: func(i int) bool { return i%4 != 1 }, url: true}, alone: 5 * mb},
		{feedCase: feedCase{name: "URL: the pool ends early", size: 16 * mb, spans: tiled(100, 16*mb, mb), stop: 5, url: true}, alone: -1},
		{feedCase: feedCase{name: "URL: no span", size: 3*mb + 1, url: true}, alone: 3*mb + 1},
		{feedCase: feedCase{name: "URL: no span came", size: 3 * mb, spans: tiled(0, 3*mb, mb), come: func(int) bool { return false }, url: true}, alone: 3 * mb},
	} {
		f, d, sum, err, want := runFeed(t, c.feedCase)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !bytes.Equal(sum, want[:]) {
			t.Errorf("%s: digest %x, want %x", c.name, sum, want)
		}
		if f.whole != c.whole || (d.wholes == 1) != c.whole {
			t.Errorf("%s: hashed whole %v (%d), want %v", c.name, f.whole, d.wholes, c.whole)
		}
		if !c.whole {
			if f.read+f.fromSpans != int64(c.size) || (c.alone >= 0 && f.read != c.alone) || (c.most > 0 && f.read > c.most) {
				t.Errorf("%s: %d bytes read alone, %d from the spans, of %d; want %d alone", c.name, f.read, f.fromSpans, c.size, c.alone)
			}
		}
	}
	for _, url := range []bool{false, true} {
		_, _, sum, err, _ := runFeed(t, feedCase{name: "failing", size: 10 * mb, spans: tiled(mb, 9*mb, mb), fail: 9 * mb, url: url})
		if err == nil || sum != nil {
			t.Errorf("a failed read (URL %v): digest %x, error %v; want no digest and an error", url, sum, err)
		}
	}
}

// TestFeedGate: a read far ahead of the feed waits until the spans before
// it came (the spans held stay within feedAhead), and one within it does
// not wait.
func TestFeedGate(t *testing.T) {
	size := feedAhead + 64<<20
	d := &testDigest{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	read := func(from, to int64, into js.Value) (js.Value, error) { return into, nil }
	f := newFeed(ctx, d, js.Undefined(), size, read, func(js.Value) {})
	spans := tiled(0, size, 32<<20)
	f.plan(spans)
	near := make(chan struct{})
	go func() { f.gate(ctx, feedAhead); close(near) }() // within: at once
	select {
	case <-near:
	case <-time.After(5 * time.Second):
		t.Fatalf("a read %d bytes ahead of the feed waited", feedAhead)
	}
	far := make(chan struct{})
	go func() { f.gate(ctx, feedAhead+32<<20); close(far) }()
	select {
	case <-far:
		t.Fatalf("a read %d bytes ahead of the feed did not wait", feedAhead+32<<20)
	case <-time.After(200 * time.Millisecond):
	}
	zeros := make([]byte, 32<<20)
	f.offer(spans[0][0], spans[0][1], arrayOf(zeros[:spans[0][1]-spans[0][0]]))
	select {
	case <-far:
	case <-time.After(10 * time.Second):
		t.Fatal("the read waited on although the first span was hashed")
	}
	f.abandon()
	if _, _, err := f.wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestFeedEarly: before the first span comes the feed reads the file's
// start itself, up to its early bound and no further, and the spans then
// take over (the digest right); a feed whose job is cancelled ends, its
// gated reads let go, with an error and no digest.
func TestFeedEarly(t *testing.T) {
	const mb = 1 << 20
	size := int64(20 * mb)
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	want := sha256.Sum256(data)
	read := func(from, to int64, into js.Value) (js.Value, error) {
		js.CopyBytesToJS(js.Global().Get("Uint8Array").New(into, 0, int(to-from)), data[from:to])
		return into, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := &testDigest{data: data}
	f := newFeed(ctx, d, js.Undefined(), size, read, func(js.Value) {})
	f.setEarly(6 * mb)
	spans := tiled(4096, size, 2*mb)
	f.plan(spans)
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		c := f.cursor
		f.mu.Unlock()
		if c >= 6*mb {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the feed read %d bytes before any span came, want 6 MiB", c)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and no further
	f.mu.Lock()
	c := f.cursor
	f.mu.Unlock()
	if c != 6*mb {
		t.Errorf("the feed read on to %d before any span came, want 6 MiB", c)
	}
	for _, s := range spans {
		f.offer(s[0], s[1], arrayOf(data[s[0]:s[1]]))
	}
	sum, _, err := f.wait(ctx)
	if err != nil || !bytes.Equal(sum, want[:]) {
		t.Fatalf("digest %x, %v; want %x", sum, err, want)
	}
	if f.read != 6*mb || f.fromSpans != size-6*mb {
		t.Errorf("%d bytes read early, %d from the spans; want 6 MiB and the rest", f.read, f.fromSpans)
	}

	// Cancelled: no span comes, a read far ahead waits, then the job ends.
	cctx, ccancel := context.WithCancel(context.Background())
	g := newFeed(cctx, &testDigest{data: data}, js.Undefined(), size, read, func(js.Value) {})
	g.plan(spans)
	gated := make(chan struct{})
	go func() { g.gate(cctx, size); close(gated) }()
	time.Sleep(50 * time.Millisecond)
	ccancel()
	select {
	case <-gated:
	case <-time.After(5 * time.Second):
		t.Fatal("a gated read outlived its job")
	}
	select {
	case <-g.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the feed outlived its job")
	}
	if g.err == nil || g.sum != nil {
		t.Errorf("a cancelled feed: digest %x, error %v; want an error and no digest", g.sum, g.err)
	}
}
