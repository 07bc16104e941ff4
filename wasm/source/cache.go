package source

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Cache keeps byte ranges read by range-read sources in a Store (the
// browser's Origin Private File System, wasm/browser; natively there is
// none), so that bytes are fetched once: a second audit of the same
// commit reads them from it.
//
// What is kept is keyed by a validator and the file: the commit, when the
// file's URL names one (a Hub resolve URL /resolve/{commit}/…, whose bytes
// never change), or else the strong ETag the server sent for the file
// (Key): bytes fetched with neither are never kept. Each range fetched is
// an extent, a Store entry holding its bytes, a CRC-32 of every MiB of
// them and a trailer; a read is served from the extents that cover it and
// the gaps between them are fetched (and kept). A cached range that is
// short or whose CRC differs is dropped and fetched again.
//
// The bytes held never exceed Max (extents are evicted least recently
// used first, the order of their writing for those found at start; one
// larger than Max is not kept). When the Store fails to write (the
// browser's quota is exhausted) the cache turns itself off for the rest of
// the session and every read goes to the network: a read never fails
// because of the cache. A ReadOnly cache (the audit's pool workers) only
// reads what another wrote.
type Cache struct {
	// Max bounds the bytes held (DefaultCacheMax when zero at NewCache).
	Max      int64
	ReadOnly bool

	store Store
	mu    sync.Mutex
	ext   map[string][]*extent // by key hash
	tick  uint64
	used  int64            // bytes held (extents, reservations, undeletable)
	busy  map[string]int64 // entry names being written: their reservations
	off   string           // why the cache is off ("" while on)
	st    CacheStats
}

// DefaultCacheMax is a cache's bound unless it says otherwise: 2 GB.
const DefaultCacheMax = 2_000_000_000

// Store is where a Cache keeps its entries: flat names, whole entries
// written once, read by range.
type Store interface {
	// List names the entries, with their sizes (-1: not known, a short
	// entry is then found when read) and when they were written.
	List() ([]StoreEntry, error)
	// ReadAt fills p from entry name at off; fewer bytes than len(p) (the
	// entry is shorter) is not an error, n says.
	ReadAt(name string, p []byte, off int64) (n int, err error)
	// Write creates (or replaces) name with the concatenation of parts.
	Write(name string, parts ...[]byte) error
	// Remove deletes name.
	Remove(name string) error
}

// StoreEntry is one entry of a Store.
type StoreEntry struct {
	Name string
	Size int64
	Time time.Time
}

// CacheStats counts what a cache did this session.
type CacheStats struct {
	Hits    int64 // bytes read from the cache
	Fetched int64 // bytes read through it from the network
	Stored  int64 // bytes written to it
	Evicted int64 // bytes evicted
	Corrupt int   // extents found short or corrupt, dropped
}

// CacheInfo describes a cache: what it holds, its bound, whether it is on.
type CacheInfo struct {
	Bytes   int64
	Max     int64
	Entries int
	Off     string // why it is off ("" while on)
	CacheStats
}

// extent is one entry: bytes [off, off+n) of the file whose key hashes to
// kh, a file of size bytes (0: not known).
type extent struct {
	name      string
	kh        string
	off, n    int64
	size      int64
	stored    int64 // the entry's size in the Store
	tick      uint64
	pins      int
	dead      bool // dropped from the index (evicted, corrupt, cleared)
	unremoved bool // dropped, its entry not yet deleted (pinned)
}

func (e *extent) end() int64 { return e.off + e.n }

// block is the span of bytes one CRC covers.
const block = 1 << 20

// magic ends every entry (with the data's length): a truncated entry lacks it.
const magic = "clefcch1"

// trailerLen is the bytes after n bytes of data: a CRC per block, the
// length and the magic.
func trailerLen(n int64) int64 { return 4*((n+block-1)/block) + 16 }

// NewCache opens a cache over store, indexing what it holds: entries that
// are not a cache's, or whose size is wrong (a write cut short), are
// deleted (unless ReadOnly). If the store cannot be listed the cache is off.
func NewCache(store Store, max int64, readOnly bool) *Cache {
	if max <= 0 {
		max = DefaultCacheMax
	}
	c := &Cache{Max: max, ReadOnly: readOnly, store: store, ext: map[string][]*extent{}, busy: map[string]int64{}}
	ents, err := store.List()
	if err != nil {
		c.off = "the store cannot be listed: " + err.Error()
		return c
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Time.Before(ents[j].Time) })
	for _, se := range ents {
		e, ok := parseName(se.Name)
		if !ok || (se.Size >= 0 && se.Size != e.n+trailerLen(e.n)) {
			if !readOnly {
				store.Remove(se.Name)
			}
			continue
		}
		c.tick++
		e.tick, e.stored = c.tick, e.n+trailerLen(e.n)
		c.ext[e.kh] = append(c.ext[e.kh], e)
		c.used += e.stored
	}
	return c
}

// keyHash names a key in entry names.
func keyHash(key string) string {
	s := sha256.Sum256([]byte(key))
	return hex.EncodeToString(s[:12])
}

func entryName(kh string, off, n, size int64) string {
	return fmt.Sprintf("%s-%x-%x-%x", kh, off, n, size)
}

func parseName(name string) (*extent, bool) {
	parts := strings.Split(name, "-")
	if len(parts) != 4 || len(parts[0]) != 24 {
		return nil, false
	}
	var v [3]int64
	for i, p := range parts[1:] {
		x, err := strconv.ParseInt(p, 16, 64)
		if err != nil || x < 0 {
			return nil, false
		}
		v[i] = x
	}
	if v[1] <= 0 || (v[2] > 0 && v[0]+v[1] > v[2]) {
		return nil, false
	}
	return &extent{name: name, kh: parts[0], off: v[0], n: v[1], size: v[2]}, true
}

// Info says what the cache holds.
func (c *Cache) Info() CacheInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, es := range c.ext {
		n += len(es)
	}
	return CacheInfo{Bytes: c.used, Max: c.Max, Entries: n, Off: c.off, CacheStats: c.st}
}

// Clear deletes every entry (what other workers wrote too); the cache is
// on again. An entry that cannot be deleted (being read) stays counted.
func (c *Cache) Clear() error {
	c.mu.Lock()
	for _, es := range c.ext {
		for _, e := range es {
			e.dead = true // its readers leave it alone
		}
	}
	c.ext, c.off = map[string][]*extent{}, ""
	c.mu.Unlock()
	ents, err := c.store.List()
	if err != nil {
		return err
	}
	var left int64
	var first error
	for _, se := range ents {
		if err := c.store.Remove(se.Name); err != nil {
			left += se.Size
			if first == nil {
				first = err
			}
		}
	}
	c.mu.Lock()
	c.used = left
	for _, n := range c.busy {
		c.used += n // being written: reserved
	}
	c.mu.Unlock()
	return first
}

// drop deletes e's entry, or leaves that to its last reader (c.mu not
// held).
func (c *Cache) drop(e *extent) {
	c.mu.Lock()
	e.dead = true
	if e.pins > 0 {
		e.unremoved = true
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.remove(e)
}

// remove deletes e's entry from the store: the bytes held go down unless
// it could not be deleted.
func (c *Cache) remove(e *extent) {
	if c.ReadOnly {
		return
	}
	err := c.store.Remove(e.name)
	c.mu.Lock()
	if err == nil {
		c.used -= e.stored
	}
	c.mu.Unlock()
}

// unlink takes e out of the index (c.mu held).
func (c *Cache) unlink(e *extent) {
	es := c.ext[e.kh]
	for i, x := range es {
		if x == e {
			c.ext[e.kh] = append(es[:i:i], es[i+1:]...)
			break
		}
	}
	if len(c.ext[e.kh]) == 0 {
		delete(c.ext, e.kh)
	}
}

// piece is part of a read: from extent e, or a gap to fetch (e nil).
type piece struct {
	off, end int64
	e        *extent
}

// plan splits [off, end) of key hash kh into pieces, pinning the extents
// used (c.mu held).
func (c *Cache) plan(kh string, off, end int64) []piece {
	es := c.ext[kh]
	var out []piece
	for pos := off; pos < end; {
		var best *extent
		next := end
		for _, e := range es {
			switch {
			case e.off <= pos && e.end() > pos && (best == nil || e.end() > best.end()):
				best = e
			case e.off > pos && e.off < next:
				next = e.off
			}
		}
		if best != nil {
			q := min(end, best.end())
			c.tick++
			best.tick = c.tick
			best.pins++
			out = append(out, piece{pos, q, best})
			pos = q
			continue
		}
		out = append(out, piece{pos, next, nil})
		pos = next
	}
	return out
}

// Fetch reads bytes [off, off+len(p)) from the network; keep says whether
// they came with the validator the key names (else they are not kept).
type Fetch func(p []byte, off int64) (keep bool, err error)

// Read fills p with bytes [off, off+len(p)) of the file whose cache key is
// key (Key; "" reads from fetch alone), of size bytes (0: unknown): from
// the extents that hold them, the rest with fetch, which is kept.
func (c *Cache) Read(key string, size int64, p []byte, off int64, fetch Fetch) error {
	if c == nil || key == "" || len(p) == 0 {
		_, err := fetch(p, off)
		return err
	}
	kh := keyHash(key)
	c.mu.Lock()
	if c.off != "" {
		c.mu.Unlock()
		_, err := fetch(p, off)
		return err
	}
	pieces := c.plan(kh, off, off+int64(len(p)))
	c.mu.Unlock()
	var err error
	for _, pc := range pieces {
		q := p[pc.off-off : pc.end-off]
		if pc.e != nil {
			ok := c.fromExtent(pc.e, q, pc.off)
			c.unpin(pc.e, !ok)
			if ok {
				continue
			}
		}
		if err != nil {
			continue // unpin the rest
		}
		var keep bool
		if keep, err = fetch(q, pc.off); err == nil {
			c.mu.Lock()
			c.st.Fetched += int64(len(q))
			c.mu.Unlock()
			if keep {
				c.Put(key, size, pc.off, q)
			}
		}
	}
	return err
}

// unpin releases a reader's hold on e, dropping it when it was bad.
func (c *Cache) unpin(e *extent, bad bool) {
	c.mu.Lock()
	e.pins--
	if bad && !e.dead {
		c.st.Corrupt++
		c.unlink(e)
		e.dead, e.unremoved = true, true
	}
	remove := e.unremoved && e.pins == 0
	if remove {
		e.unremoved = false
	}
	c.mu.Unlock()
	if remove {
		c.remove(e)
	}
}

// fromExtent fills p with bytes [off, off+len(p)) of the file from e,
// checking the CRC of every block read: false if the entry is short,
// corrupt or unreadable. The whole blocks inside the range are read
// straight into p; a block only partly inside it (at either end) through
// one buffer of a block — not a buffer the size of the range, which a
// read of a few bytes off the blocks' bounds would otherwise allocate (an
// audit's 32 MB spans, in a WebAssembly memory that never shrinks).
func (c *Cache) fromExtent(e *extent, p []byte, off int64) bool {
	rel := off - e.off // where p starts in the entry
	b0 := rel / block
	b1 := (rel + int64(len(p)) + block - 1) / block
	crcs := make([]byte, 4*(b1-b0))
	if n, err := c.store.ReadAt(e.name, crcs, e.n+4*b0); err != nil || n != len(crcs) {
		return false
	}
	var edge []byte
	for b := b0; b < b1; {
		lo, hi := b*block, min(e.n, (b+1)*block)
		crc := func(i int64) uint32 { return binary.LittleEndian.Uint32(crcs[4*(i-b0):]) }
		if lo >= rel && hi <= rel+int64(len(p)) {
			// A run of whole blocks inside p: one read into place.
			end := b + 1
			for end < b1 && min(e.n, (end+1)*block) <= rel+int64(len(p)) {
				end++
			}
			top := min(e.n, end*block)
			dst := p[lo-rel : top-rel]
			if n, err := c.store.ReadAt(e.name, dst, lo); err != nil || n != len(dst) {
				return false
			}
			for i := b; i < end; i++ {
				s, t := i*block-lo, min(top, (i+1)*block)-lo
				if crc32.ChecksumIEEE(dst[s:t]) != crc(i) {
					return false
				}
			}
			b = end
			continue
		}
		if edge == nil {
			edge = make([]byte, block)
		}
		buf := edge[:hi-lo]
		if n, err := c.store.ReadAt(e.name, buf, lo); err != nil || n != len(buf) {
			return false
		}
		if crc32.ChecksumIEEE(buf) != crc(b) {
			return false
		}
		from, to := max(lo, rel), min(hi, rel+int64(len(p)))
		copy(p[from-rel:to-rel], buf[from-lo:to-lo])
		b++
	}
	c.mu.Lock()
	c.st.Hits += int64(len(p))
	c.mu.Unlock()
	return true
}

// Put keeps bytes [off, off+len(data)) of the file whose key is key (of
// size bytes; 0: unknown), evicting the least recently used extents to
// make room. It does nothing when the cache is off or read-only, or data
// is larger than Max.
func (c *Cache) Put(key string, size, off int64, data []byte) {
	if c == nil || key == "" || len(data) == 0 || c.ReadOnly {
		return
	}
	n := int64(len(data))
	kh := keyHash(key)
	name := entryName(kh, off, n, size)
	total := n + trailerLen(n)
	c.mu.Lock()
	if _, writing := c.busy[name]; c.off != "" || total > c.Max || writing || c.covered(kh, off, off+n) {
		c.mu.Unlock()
		return
	}
	victims, ok := c.victims(total)
	if !ok {
		c.mu.Unlock()
		return // what is held is in use: keep none of this
	}
	for _, v := range victims {
		c.unlink(v)
		c.st.Evicted += v.stored
	}
	c.busy[name] = 0
	c.mu.Unlock()
	for _, v := range victims {
		c.drop(v)
	}
	c.mu.Lock()
	ok = c.used+total <= c.Max // an eviction that failed still takes room
	if ok {
		c.used += total // reserved while it is written
		c.busy[name] = total
	}
	c.mu.Unlock()
	var err error
	if ok {
		err = c.store.Write(name, data, trailer(data))
	}
	c.mu.Lock()
	delete(c.busy, name)
	switch {
	case !ok:
	case err != nil:
		c.used -= total
		c.off = "the browser's storage refused to write (" + clipErr(err) + "): bytes are read from the network"
	default:
		c.tick++
		e := &extent{name: name, kh: kh, off: off, n: n, size: size, stored: total, tick: c.tick}
		c.ext[kh] = append(c.ext[kh], e)
		c.st.Stored += n
	}
	c.mu.Unlock()
	if ok && err != nil {
		c.store.Remove(name) // what part of it was written
	}
}

// victims are the least recently used extents no reader holds whose
// eviction makes room for total more bytes (c.mu held); false if even all
// of them would not.
func (c *Cache) victims(total int64) ([]*extent, bool) {
	held := c.used
	if held+total <= c.Max {
		return nil, true
	}
	var free []*extent
	for _, es := range c.ext {
		for _, e := range es {
			if e.pins == 0 {
				free = append(free, e)
			}
		}
	}
	sort.Slice(free, func(i, j int) bool { return free[i].tick < free[j].tick })
	for i, e := range free {
		held -= e.stored
		if held+total <= c.Max {
			return free[:i+1], true
		}
	}
	return nil, false
}

// covered tells whether an extent already holds [off, end) (c.mu held).
func (c *Cache) covered(kh string, off, end int64) bool {
	for _, e := range c.ext[kh] {
		if e.off <= off && e.end() >= end {
			return true
		}
	}
	return false
}

// trailer is what follows data in its entry.
func trailer(data []byte) []byte {
	n := int64(len(data))
	t := make([]byte, trailerLen(n))
	for i := int64(0); i*block < n; i++ {
		binary.LittleEndian.PutUint32(t[4*i:], crc32.ChecksumIEEE(data[i*block:min(n, (i+1)*block)]))
	}
	binary.LittleEndian.PutUint64(t[len(t)-16:], uint64(n))
	copy(t[len(t)-8:], magic)
	return t
}

// Head is the first bytes of the file whose key is key, up to n (all of
// it when it is smaller), and its size, if the cache holds them and knows
// the size.
func (c *Cache) Head(key string, n int) (size int64, head []byte, ok bool) {
	if c == nil || key == "" {
		return 0, nil, false
	}
	kh := keyHash(key)
	c.mu.Lock()
	var e *extent
	for _, x := range c.ext[kh] {
		if x.off == 0 && x.size > 0 && (x.n >= int64(n) || x.n == x.size) && (e == nil || x.n > e.n) {
			e = x
		}
	}
	if e == nil {
		c.mu.Unlock()
		return 0, nil, false
	}
	e.pins++
	c.tick++
	e.tick = c.tick
	c.mu.Unlock()
	head = make([]byte, min(int64(n), e.n))
	good := c.fromExtent(e, head, 0)
	c.unpin(e, !good)
	if !good {
		return 0, nil, false
	}
	return e.size, head, true
}

func clipErr(err error) string {
	s := err.Error()
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
