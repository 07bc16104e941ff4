package audit

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// overlapFS counts the reads under way through its files. Once the
// inventory is done, the first read of each phase (core reserved, then
// released) waits up to wait for a second read to start beside it.
type overlapFS struct {
	fs.FS
	wait     time.Duration
	mu       sync.Mutex
	cond     *sync.Cond
	active   int
	values   bool // the inventory is done
	released bool // Options.Reserved says no core is taken
	waited   [2]bool
	overlap  [2]bool // two reads at once: while reserved, once released
	reads    int     // since the inventory
	after    int     // the core is released after this many
	taken    chan struct{}
}

type overlapFile struct {
	fs.File
	ra  io.ReaderAt
	fsy *overlapFS
}

func (o *overlapFS) Open(name string) (fs.File, error) {
	f, err := o.FS.Open(name)
	if err != nil {
		return nil, err
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return f, nil
	}
	return &overlapFile{File: f, ra: ra, fsy: o}, nil
}

func (f *overlapFile) ReadAt(p []byte, off int64) (int, error) {
	o := f.fsy
	o.mu.Lock()
	o.active++
	if o.values {
		if o.reads++; o.reads == o.after {
			o.released = true
			close(o.taken)
		}
	}
	phase := 0
	if o.released {
		phase = 1
	}
	if o.active > 1 && o.values {
		o.overlap[phase] = true
	}
	o.cond.Broadcast()
	if o.values && !o.waited[phase] {
		o.waited[phase] = true
		// The timer's own flag ends the wait: a clock read after the timer
		// was set could still be short of o.wait when its one broadcast
		// arrives, and the loop would then wait for ever.
		expired := false
		deadline := time.AfterFunc(o.wait, func() { o.mu.Lock(); expired = true; o.cond.Broadcast(); o.mu.Unlock() })
		for o.active < 2 && !expired {
			o.cond.Wait()
		}
		deadline.Stop()
	}
	o.mu.Unlock()
	n, err := f.ra.ReadAt(p, off)
	o.mu.Lock()
	o.active--
	o.mu.Unlock()
	return n, err
}

// TestReservedCore: while Options.Reserved says a core is taken (the
// runner's read-ahead hasher), one of two workers waits — no two pairs are
// read at once — and it joins in once the core is released.
func TestReservedCore(t *testing.T) {
	dir := filepath.Join(worldDir, world.AdapterDir)
	o := &overlapFS{FS: source.Dir(dir), wait: 300 * time.Millisecond, after: 8, taken: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	opt := Options{Claims: demoClaims(t), Mode: report.ModeExact, Workers: 2,
		OnInventory: func(*Result) { o.mu.Lock(); o.values = true; o.mu.Unlock() },
		Reserved: func() <-chan struct{} {
			o.mu.Lock()
			defer o.mu.Unlock()
			if o.released {
				return nil
			}
			return o.taken
		},
	}
	res, err := Run(context.Background(), o, ".", opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "pass" {
		t.Fatalf("verdict %s, want PASS", res.Verdict)
	}
	if o.overlap[0] {
		t.Error("two pairs were read at once while a core was reserved")
	}
	if !o.waited[1] {
		t.Fatal("the core was never released before the last pair: the test proves nothing about the join")
	}
	if !o.overlap[1] {
		t.Error("the second worker did not join once the core was released")
	}
}

// TestReservedNeverReleased: a single worker never waits for the reserved
// core; a worker waiting for one stops once every pair is dealt, or when
// the audit is cancelled.
func TestReservedNeverReleased(t *testing.T) {
	dir := filepath.Join(worldDir, world.AdapterDir)
	forever := make(chan struct{})
	opt := Options{Claims: demoClaims(t), Mode: report.ModeExact, Workers: 1,
		Reserved: func() <-chan struct{} { return forever }}
	if res := run(t, dir, opt); res.Verdict != "pass" {
		t.Fatalf("one worker, core reserved: verdict %s, want PASS", res.Verdict)
	}
	opt.Workers = 2 // the one that waits returns once every pair is dealt
	if res := run(t, dir, opt); res.Verdict != "pass" {
		t.Fatalf("two workers, core reserved throughout: verdict %s, want PASS", res.Verdict)
	}
	ctx, cancel := context.WithCancel(context.Background())
	opt.OnInventory = func(*Result) { cancel() }
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, source.Dir(dir), ".", opt)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled audit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a worker waiting for the reserved core did not stop when the audit was cancelled")
	}
}
