package runner

import (
	"io"
	"sort"
	"time"

	"github.com/kvit-s/clefcheck/wasm/source"
)

// The gaps of a tracker: what the digest must read for itself (a range
// that did not fit the window, the gap the full window waits for, bytes
// nobody reads), and the check's reads under way, which a reader whose
// range came early waits for (see tracker.saw).

// span is bytes [off, end) of a file.
type span struct{ off, end int64 }

// gapWait is how long a reader waiting for room lets the gap at next be
// nobody's read before reading it itself (see saw). A variable for the
// tests.
var gapWait = time.Second

// wake wakes the readers waiting for room (a gap's wait is over).
func (t *tracker) wake() {
	t.mu.Lock()
	t.room.Broadcast()
	t.mu.Unlock()
}

// begin and end bracket a read of the check's (with waits).
func (t *tracker) begin(off, end int64) {
	t.mu.Lock()
	t.inflight = append(t.inflight, span{off, end})
	t.mu.Unlock()
}

func (t *tracker) end(off, end int64) {
	t.mu.Lock()
	t.done(span{off, end})
	t.mu.Unlock()
}

// done ends a read in flight (t.mu held).
func (t *tracker) done(r span) {
	for i, s := range t.inflight {
		if s == r {
			t.inflight = append(t.inflight[:i], t.inflight[i+1:]...)
			break
		}
	}
	t.room.Broadcast()
}

// inFlight tells whether a read under way has byte x (t.mu held).
func (t *tracker) inFlight(x int64) bool {
	for _, s := range t.inflight {
		if s.off <= x && x < s.end {
			return true
		}
	}
	return false
}

// gapEnd is where a gap read from next stops: at fillChunk bytes, the end
// of the file, the first held range or the first read under way after it
// (t.mu held).
func (t *tracker) gapEnd(next int64) int64 {
	to := min(next+fillChunk, t.size)
	if len(t.pending) > 0 && t.pending[0].off > next {
		to = min(to, t.pending[0].off)
	}
	for _, s := range t.inflight {
		if s.off > next {
			to = min(to, s.off)
		}
	}
	return to
}

// drop remembers an early range that did not fit, to be read again when
// its turn comes (t.mu held). The gap before the held ranges is late too:
// the window is full waiting for it.
func (t *tracker) drop(off, end int64) {
	if len(t.pending) > 0 {
		t.late = max(t.late, t.pending[0].off)
	}
	i := sort.Search(len(t.dropped), func(i int) bool { return t.dropped[i].off > off })
	if i > 0 && t.dropped[i-1].end >= end {
		return // dropped already
	}
	t.dropped = append(t.dropped, span{})
	copy(t.dropped[i+1:], t.dropped[i:])
	t.dropped[i] = span{off, end}
}

// due is the next gap to read for the digest alone (t.mu held): the part
// of a dropped range that is now next, or the late gap — the one before
// the held ranges when a range did not fit: the window is full of ranges
// waiting for it, and whoever reads it is late or nobody will. Not while
// a read of the check's under way has it.
func (t *tracker) due() (from, to int64, ok bool) {
	next := t.next.Load()
	for len(t.dropped) > 0 && t.dropped[0].end <= next {
		t.dropped = t.dropped[1:]
	}
	switch {
	case t.inFlight(next):
		return 0, 0, false
	case len(t.dropped) > 0 && t.dropped[0].off <= next:
		to = t.dropped[0].end
	case t.late > next:
		to = t.late
	default:
		t.late = 0
		return 0, 0, false
	}
	to = min(to, t.gapEnd(next))
	return next, to, to > next
}

// fill reads and hashes the gaps that are due (see due), in the caller —
// a worker of the check or the source's reader, which thus waits for the
// gap as it would for a read of its own (t.mu held on entry and on
// return).
func (t *tracker) fill() {
	t.filling = true
	defer func() { t.filling = false }()
	for !t.fillErr && !t.finishing.Load() {
		from, to, ok := t.due()
		if !ok || !t.readGap(from, to) {
			return
		}
	}
}

// readGap reads bytes [from, to) for the digest alone and hashes what of
// them is then next, with t.mu released while it reads — the others go
// on, and the read itself, observed, may pass through saw — and the range
// in flight meanwhile. It says whether the read succeeded; if not, the
// gaps are left to Finish, which reads them again and says what failed
// (t.mu held on entry and on return).
func (t *tracker) readGap(from, to int64) bool {
	r := span{from, to}
	t.inflight = append(t.inflight, r)
	var buf []byte
	if n := len(t.bufs); n > 0 {
		buf, t.bufs = t.bufs[n-1], t.bufs[:n-1]
	} else {
		buf = make([]byte, fillChunk)
	}
	t.mu.Unlock()
	t.gapOnce.Do(func() { t.gapFile, t.gapErr = source.Open(t.fsys, t.name) })
	err := t.gapErr
	if err == nil {
		_, err = t.gapFile.ReadAt(buf[:to-from], from)
		if err == io.EOF && to == t.size {
			err = nil
		}
	}
	t.mu.Lock()
	defer func() { t.bufs = append(t.bufs, buf) }()
	t.done(r)
	if err != nil {
		t.fillErr = true
		return false
	}
	t.reread.Add(to - from)
	if next := t.next.Load(); next >= from && next < to && !t.finishing.Load() {
		t0 := time.Now()
		t.h.Write(buf[next-from : to-from])
		t.next.Store(to)
		t.drain()
		t.ns.Add(int64(time.Since(t0)))
	}
	return true
}
