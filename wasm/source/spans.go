package source

import "sync"

// span is bytes [off, off+len(data)) of a file.
type span struct {
	off  int64
	data []byte
}

// fill copies p from the span if it holds all of [off, off+len(p)).
func (s span) fill(p []byte, off int64) bool {
	if s.data == nil || off < s.off || off+int64(len(p)) > s.off+int64(len(s.data)) {
		return false
	}
	copy(p, s.data[off-s.off:])
	return true
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
	s.mu.Lock()
	sp, ok := s.m[name]
	s.mu.Unlock()
	return ok && sp.fill(p, off)
}

// maxChunks is how many small-read chunks an open file keeps.
const maxChunks = 8

// chunks is an open file's cache of aligned chunks for small reads, the
// oldest dropped first when more than maxChunks are held.
type chunks struct {
	m     map[int64][]byte
	order []int64
}

func (c *chunks) get(at int64) ([]byte, bool) {
	data, ok := c.m[at]
	return data, ok
}

func (c *chunks) put(at int64, data []byte) {
	if c.m == nil {
		c.m = map[int64][]byte{}
	}
	if _, ok := c.m[at]; ok {
		return
	}
	c.m[at] = data
	c.order = append(c.order, at)
	if len(c.order) > maxChunks {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}
