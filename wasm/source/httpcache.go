package source

import "strings"

// The HTTP source's side of a Cache: which bytes may be kept, under what
// key. A file whose URL names a commit (a Hub resolve URL,
// /resolve/{40 hex digits}/…) never changes: its key is its URL. Any other
// file is kept only under the strong ETag its server sent (the probe's;
// later answers must carry the same one): a weak ETag (W/"…"), or none,
// keeps nothing.

// fileMeta is what a file's probe learnt: its ETag and size, and the
// bytes it read (head); seeded: it was handed over (Seed), not learnt.
type fileMeta struct {
	etag   string
	size   int64
	head   []byte
	seeded bool
}

// minKept is the smallest probe kept (unless it is the whole file): a Stat's
// one byte is not worth an entry.
const minKept = 4 << 10

// UseCache makes the source keep what it reads in c, and read from it
// (nil: no cache, as natively).
func (h *HTTP) UseCache(c *Cache) {
	h.mu.Lock()
	h.cache = c
	h.mu.Unlock()
}

// Cache is the source's cache (nil if none).
func (h *HTTP) Cache() *Cache {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cache
}

func (h *HTTP) learn(name, etag string, size int64, head []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.meta == nil {
		h.meta = map[string]fileMeta{}
	}
	if old, ok := h.meta[name]; ok && old.etag == etag && old.size == size && len(old.head) > len(head) {
		head = old.head // a Stat's one byte after an Open's first chunk
	}
	h.meta[name] = fileMeta{etag: etag, size: size, head: head}
}

func (h *HTTP) known(name string) fileMeta {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.meta[name]
}

// atCommit tells whether name's URL names a commit (a Hub resolve URL
// pinned to one).
func (h *HTTP) atCommit(name string) bool { return CommitOf(h.URL(name)) != "" }

// CommitOf is the commit a Hub resolve URL names ("" if u names none:
// a branch, a tag, or not a resolve URL).
func CommitOf(u string) string {
	_, rest, ok := strings.Cut(u, "/resolve/")
	if !ok || len(rest) < 41 || rest[40] != '/' {
		return ""
	}
	for _, c := range rest[:40] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return rest[:40]
}

// strongETag tells whether v is a strong entity tag ("…", not W/"…").
func strongETag(v string) bool {
	return len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"'
}

// cacheKey is name's key in the cache given the ETag its server sent: ""
// (not kept) when its URL names no commit and etag is not strong.
func (h *HTTP) cacheKey(name, etag string) string {
	u := h.URL(name)
	switch {
	case CommitOf(u) != "":
		return "commit " + u
	case strongETag(etag):
		return "etag " + etag + " " + u
	}
	return ""
}

// Keeps tells whether the source's cache keeps what it reads of name:
// there is a cache, and name's URL names a commit or its probe sent a
// strong ETag (known once name was opened). Bytes it does not keep may go
// around the source (the browser's dealer fetches them straight into the
// buffers it sends its workers).
func (h *HTTP) Keeps(name string) bool {
	return h.Cache() != nil && h.cacheKey(name, h.known(name).etag) != ""
}
