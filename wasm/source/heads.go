package source

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// Head is what the probe of one file of an HTTP source learnt: the file's
// size, the ETag its server sent ("" if none), and its first bytes (those
// the probe read: FirstChunk at most, the whole file if it is smaller).
type Head struct {
	Name  string
	Size  int64
	ETag  string
	Bytes []byte
}

// Heads are the files this source has probed, by name, with what their
// probes learnt: what another source of the same base URL may be handed
// (Seed) instead of probing them again. The bytes are shared; they never
// change.
func (h *HTTP) Heads() []Head {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Head, 0, len(h.meta))
	for name, m := range h.meta {
		if len(m.head) > 0 {
			out = append(out, Head{Name: name, Size: m.size, ETag: m.etag, Bytes: m.head})
		}
	}
	slices.SortFunc(out, func(a, b Head) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Seed hands the source what another source of the same base URL learnt
// by probing its files (Heads): the browser's engine worker hands its pool
// workers the adapter's headers so, and they open it without a request. A
// probe of a seeded file for no more bytes than it was handed (or of a file
// handed whole) is answered from them; the size and the ETag are then
// those every later answer must carry, as if this source had probed the
// file itself (a file that changed since is caught as it would have been
// then). Files this source already probed keep what it learnt. A head that
// cannot be a probe's (a negative size, more bytes than the size, a name
// that is not a file's) is an error, and nothing is seeded.
func (h *HTTP) Seed(heads []Head) error {
	for _, s := range heads {
		if !fs.ValidPath(s.Name) || s.Name == "." || s.Size < 0 || int64(len(s.Bytes)) > s.Size || len(s.Bytes) == 0 {
			return fmt.Errorf("source: the head of %q (%d of %d bytes) is not a probe's", s.Name, len(s.Bytes), s.Size)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.meta == nil {
		h.meta = map[string]fileMeta{}
	}
	for _, s := range heads {
		if _, ok := h.meta[s.Name]; !ok {
			h.meta[s.Name] = fileMeta{etag: s.ETag, size: s.Size, head: s.Bytes, seeded: true}
		}
	}
	return nil
}

// seeded is the size and first n bytes of name if it was handed over with
// them (Seed).
func (h *HTTP) seeded(name string, n int) (int64, []byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.meta[name]
	if !ok || !m.seeded || (len(m.head) < n && int64(len(m.head)) < m.size) {
		return 0, nil, false
	}
	return m.size, m.head[:min(n, len(m.head))], true
}
