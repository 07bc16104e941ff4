package source

import (
	"slices"
	"sync"
)

// span is bytes [off, off+len(data)) of a file.
type span struct {
	off  int64
	data []byte
}

// fill copies p from the span if it holds all of [off, off+len(p)).
func (s span) fill(p []byte, off int64) bool {
	b, ok := s.view(off, len(p))
	copy(p, b)
	return ok
}

// view is bytes [off, off+n) of the span, if it holds them all.
func (s span) view(off int64, n int) ([]byte, bool) {
	if s.data == nil || n < 0 || off < s.off || off+int64(n) > s.off+int64(len(s.data)) {
		return nil, false
	}
	i := int(off - s.off)
	return s.data[i : i+n : i+n], true
}

// Spans holds the bytes of files that someone else read and handed over
// (Preload): one span per file, the last one handed over. A read inside a
// file's span is served from it; a read that is not wholly inside goes to
// the file (no partial use). It is safe for concurrent use; the zero value
// is empty.
//
// This is the one preload policy of RangeFS (and so of the HTTP source and
// the browser's Files) and of browser.File: the browser audit's dealer
// reads each segment's bytes while a pool worker computes, and the worker
// drops the previous span when the next arrives.
type Spans struct {
	mu sync.Mutex
	m  map[string]span
}

// Put hands over bytes [off, off+len(data)) of file name, replacing its
// previous span; nil data drops it. data must not change afterwards.
func (s *Spans) Put(name string, off int64, data []byte) {
	s.mu.Lock()
	switch {
	case data == nil:
		delete(s.m, name)
	case s.m == nil:
		s.m = map[string]span{name: {off, data}}
	default:
		s.m[name] = span{off, data}
	}
	s.mu.Unlock()
}

// Fill copies p from name's span if it holds all of [off, off+len(p)).
func (s *Spans) Fill(name string, p []byte, off int64) bool {
	b, ok := s.View(name, off, len(p))
	copy(p, b)
	return ok
}

// View is bytes [off, off+n) of name's span, without a copy, if it holds
// them all (Viewer): valid until the span is replaced or dropped.
func (s *Spans) View(name string, off int64, n int) ([]byte, bool) {
	s.mu.Lock()
	sp, ok := s.m[name]
	s.mu.Unlock()
	if !ok {
		return nil, false
	}
	return sp.view(off, n)
}

// maxChunks is how many small-read chunks a RangeFS keeps of each file,
// for all its open handles together.
const maxChunks = 16

// chunks is a RangeFS's cache of aligned chunks for small reads, shared by
// every open handle of the file — the audit's workers each open it, and
// with a cache per handle each read the same chunks again (a small
// adapter, its tensors under a chunk each, came down once per worker) —
// the oldest dropped first when more than maxChunks of a file are held. A
// chunk being read is waited for, not read twice. The zero value is
// empty; it is safe for concurrent use.
type chunks struct {
	mu    sync.Mutex
	m     map[chunkKey]*chunkRead
	order map[string][]int64
}

type chunkKey struct {
	name string
	at   int64
}

// chunkRead is a chunk, read or being read (done closes when it is).
type chunkRead struct {
	done chan struct{}
	data []byte
	err  error
}

// get returns the chunk of name at at, reading it with read when no one
// has it (a failed read is not kept).
func (c *chunks) get(name string, at int64, read func() ([]byte, error)) ([]byte, error) {
	k := chunkKey{name, at}
	c.mu.Lock()
	if r, ok := c.m[k]; ok {
		c.mu.Unlock()
		<-r.done
		if r.err == nil {
			return r.data, nil
		}
		return read() // its reader failed (another context, say): try ours
	}
	if c.m == nil {
		c.m, c.order = map[chunkKey]*chunkRead{}, map[string][]int64{}
	}
	r := &chunkRead{done: make(chan struct{})}
	c.m[k] = r
	c.order[name] = append(c.order[name], at)
	if o := c.order[name]; len(o) > maxChunks {
		delete(c.m, chunkKey{name, o[0]})
		c.order[name] = o[1:]
	}
	c.mu.Unlock()
	r.data, r.err = read()
	if r.err != nil {
		c.mu.Lock()
		if c.m[k] == r {
			delete(c.m, k)
			c.order[name] = slices.DeleteFunc(c.order[name], func(x int64) bool { return x == at })
		}
		c.mu.Unlock()
	}
	close(r.done)
	return r.data, r.err
}
