package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// memStore is a Store in memory that records the most it ever held.
type memStore struct {
	mu      sync.Mutex
	m       map[string][]byte
	t       map[string]time.Time
	peak    int64
	failing error // Write fails with it
}

func newMemStore() *memStore { return &memStore{m: map[string][]byte{}, t: map[string]time.Time{}} }

func (s *memStore) List() ([]StoreEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StoreEntry
	for n, b := range s.m {
		out = append(out, StoreEntry{Name: n, Size: int64(len(b)), Time: s.t[n]})
	}
	return out, nil
}

func (s *memStore) ReadAt(name string, p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[name]
	if !ok {
		return 0, errors.New("NotFoundError")
	}
	if off >= int64(len(b)) {
		return 0, nil
	}
	return copy(p, b[off:]), nil
}

func (s *memStore) Write(name string, parts ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failing != nil {
		s.m[name] = []byte("partial") // what a failed write may leave
		return s.failing
	}
	s.m[name] = bytes.Join(parts, nil)
	s.t[name] = time.Now()
	time.Sleep(time.Microsecond) // distinct times, in order
	s.peak = max(s.peak, s.total())
	return nil
}

func (s *memStore) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, name)
	return nil
}

func (s *memStore) total() (n int64) {
	for _, b := range s.m {
		n += int64(len(b))
	}
	return n
}

// names are the store's entries, sorted.
func (s *memStore) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// origin is a file and the ranges fetched from it.
type origin struct {
	data    []byte
	fetched [][2]int64
}

func (o *origin) fetch(keep bool) Fetch {
	return func(p []byte, off int64) (bool, error) {
		o.fetched = append(o.fetched, [2]int64{off, off + int64(len(p))})
		copy(p, o.data[off:])
		return keep, nil
	}
}

func (o *origin) read(t *testing.T, c *Cache, key string, off, n int64) {
	t.Helper()
	p := make([]byte, n)
	if err := c.Read(key, int64(len(o.data)), p, off, o.fetch(true)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p, o.data[off:off+n]) {
		t.Fatalf("read [%d, %d): wrong bytes", off, off+n)
	}
}

// TestCacheHitsAndOverlaps: a range read twice is fetched once; a read
// that overlaps what is held fetches only the gaps, and keeps them.
func TestCacheHitsAndOverlaps(t *testing.T) {
	o := &origin{data: pattern(5<<20, 3)}
	c := NewCache(newMemStore(), 0, false)
	o.read(t, c, "k", 1000, 3<<20)
	o.read(t, c, "k", 1000, 3<<20)
	o.read(t, c, "k", 2000, 100)
	if len(o.fetched) != 1 {
		t.Fatalf("fetched %v, want the first read only", o.fetched)
	}
	o.fetched = nil
	o.read(t, c, "k", 0, 4<<20) // [0, 1000) and [1000+3 MiB, 4 MiB) are gaps
	want := [][2]int64{{0, 1000}, {1000 + 3<<20, 4 << 20}}
	if fmt.Sprint(o.fetched) != fmt.Sprint(want) {
		t.Fatalf("fetched %v, want %v", o.fetched, want)
	}
	o.fetched = nil
	o.read(t, c, "k", 0, 4<<20)
	o.read(t, c, "other", 0, 10) // another key shares nothing
	if len(o.fetched) != 1 || o.fetched[0] != [2]int64{0, 10} {
		t.Fatalf("fetched %v", o.fetched)
	}
	if st := c.Info(); st.Hits == 0 || st.Corrupt != 0 || st.Entries != 4 {
		t.Errorf("info %+v", st)
	}
	// A second session over the same store finds it all.
	o.fetched = nil
	o.read(t, NewCache(c.store, 0, false), "k", 0, 4<<20)
	o.read(t, NewCache(c.store, 0, true), "k", 500, 1<<20) // read-only, as the pool workers
	if len(o.fetched) != 0 {
		t.Errorf("a new session fetched %v", o.fetched)
	}
}

// TestCacheEviction: least recently used first, and the bytes held never
// exceed Max, at any moment.
func TestCacheEviction(t *testing.T) {
	const n = 100 << 10
	store := newMemStore()
	per := n + trailerLen(n)
	c := NewCache(store, 3*per+10, false)
	o := &origin{data: pattern(10*n, 5)}
	for i := range int64(3) { // A, B, C
		o.read(t, c, "k", i*n, n)
	}
	o.read(t, c, "k", 0, n)   // A used: B is now the oldest
	o.read(t, c, "k", 3*n, n) // D evicts B
	o.fetched = nil
	o.read(t, c, "k", 0, n)
	o.read(t, c, "k", 2*n, n)
	o.read(t, c, "k", 3*n, n)
	if len(o.fetched) != 0 {
		t.Fatalf("A, C or D was evicted: fetched %v", o.fetched)
	}
	o.read(t, c, "k", n, n)
	if len(o.fetched) != 1 {
		t.Fatalf("B was not evicted: fetched %v", o.fetched)
	}
	for i := range int64(10) {
		o.read(t, c, fmt.Sprint("k", i%3), i*n/2, n+i)
		if info := c.Info(); info.Bytes > c.Max || store.total() > c.Max {
			t.Fatalf("held %d (store %d) > max %d", info.Bytes, store.total(), c.Max)
		}
	}
	if store.peak > c.Max {
		t.Errorf("the store held %d bytes at one point, more than %d", store.peak, c.Max)
	}
	// A range larger than the bound is read, not kept.
	big := &origin{data: pattern(4*n, 1)}
	big.read(t, c, "big", 0, 4*n)
	big.read(t, c, "big", 0, 4*n)
	if len(big.fetched) != 2 {
		t.Errorf("a range over Max: fetched %v", big.fetched)
	}
	// Clear empties it.
	if err := c.Clear(); err != nil || len(store.names()) != 0 || c.Info().Bytes != 0 {
		t.Errorf("clear: %v, left %v, %d bytes", err, store.names(), c.Info().Bytes)
	}
}

// TestCacheCorrupt: an entry whose bytes changed, or that is short, is
// detected, dropped and fetched again; a cut entry is dropped at start.
func TestCacheCorrupt(t *testing.T) {
	store := newMemStore()
	c := NewCache(store, 0, false)
	o := &origin{data: pattern(3<<20, 9)}
	o.read(t, c, "k", 0, 3<<20)
	name := store.names()[0]
	store.m[name][block+7] ^= 0x40 // in the second MiB
	o.fetched = nil
	o.read(t, c, "k", 10, 100) // the first MiB is intact
	if len(o.fetched) != 0 {
		t.Fatalf("fetched %v for an intact block", o.fetched)
	}
	o.read(t, c, "k", block, 10)
	if len(o.fetched) != 1 || c.Info().Corrupt != 1 {
		t.Fatalf("a corrupt block: fetched %v, info %+v", o.fetched, c.Info())
	}
	if len(store.names()) != 1 || store.names()[0] == name {
		t.Fatalf("the corrupt entry was not replaced: %v", store.names())
	}
	// Short: the entry lost its tail (a write cut short).
	name = store.names()[0]
	store.m[name] = store.m[name][:len(store.m[name])-20]
	o.fetched = nil
	o.read(t, c, "k", block, 10)
	if len(o.fetched) != 1 {
		t.Fatalf("a short entry: fetched %v", o.fetched)
	}
	name = store.names()[0]
	store.m[name] = store.m[name][:len(store.m[name])/2]
	store.m["junk"] = []byte("x")
	c2 := NewCache(store, 0, false)
	if len(store.names()) != 0 || c2.Info().Entries != 0 {
		t.Errorf("a cut entry and junk survived the start: %v", store.names())
	}
}

// TestCacheQuota: a store that refuses to write (the quota) turns the
// cache off; reads go on from the network, none fails.
func TestCacheQuota(t *testing.T) {
	store := newMemStore()
	c := NewCache(store, 0, false)
	o := &origin{data: pattern(1<<20, 2)}
	o.read(t, c, "k", 0, 1000)
	store.failing = errors.New("QuotaExceededError: the quota has been exceeded")
	o.read(t, c, "k", 2000, 1000)
	info := c.Info()
	if !strings.Contains(info.Off, "QuotaExceeded") {
		t.Fatalf("the cache is still on: %+v", info)
	}
	if _, ok := store.m[entryName(keyHash("k"), 2000, 1000, 1<<20)]; ok {
		t.Error("the failed write's leftovers were not deleted")
	}
	o.fetched = nil
	o.read(t, c, "k", 0, 1000) // off: from the network
	if len(o.fetched) != 1 {
		t.Errorf("an off cache served %v", o.fetched)
	}
	if c.Clear(); c.Info().Off != "" {
		t.Error("clear did not turn it on again")
	}
}

// etagServer serves data with an ETag (etag() says which) and counts the
// requests.
func etagServer(data []byte, etag func() string) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if e := etag(); e != "" {
			w.Header().Set("ETag", e)
		}
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(data))
	})), &n
}

// readAll opens name in a new source over base with cache c and reads it
// in 256 kB pieces; the number of requests it made.
func readAll(t *testing.T, base string, c *Cache, data []byte, reqs *atomic.Int64) int64 {
	t.Helper()
	before := reqs.Load()
	h, err := NewHTTP(base)
	if err != nil {
		t.Fatal(err)
	}
	h.UseCache(c)
	f, err := Open(h, "dir/model.bin")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	for off := 0; off < len(data); off += 256 << 10 {
		if _, err := f.ReadAt(got[off:min(len(data), off+256<<10)], int64(off)); err != nil && err != io.EOF {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatal("wrong bytes")
	}
	return reqs.Load() - before
}

// TestHTTPCacheValidators: the HTTP source keeps bytes under the commit
// its URL names, or the strong ETag its server sent, and nothing else.
func TestHTTPCacheValidators(t *testing.T) {
	data := pattern(3<<20, 4)
	var tag atomic.Value
	tag.Store(`"v1"`)
	srv, reqs := etagServer(data, func() string { return tag.Load().(string) })
	defer srv.Close()
	commit := srv.URL + "/org/name/resolve/0123456789abcdef0123456789abcdef01234567/"
	for _, tc := range []struct {
		name, base, etag string
		second           int64 // requests of the second read
	}{
		{"commit", commit, "", 0},                       // even the probe comes from the cache
		{"strong etag", srv.URL + "/plain/", `"v1"`, 1}, // the probe, which validates
		{"weak etag", srv.URL + "/weak/", `W/"v1"`, -1},
		{"no etag", srv.URL + "/none/", "", -1},
		{"branch", srv.URL + "/org/name/resolve/main/", "", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tag.Store(tc.etag)
			c := NewCache(newMemStore(), 0, false)
			first := readAll(t, tc.base, c, data, reqs)
			second := readAll(t, tc.base, c, data, reqs)
			switch {
			case tc.second < 0 && (second != first || c.Info().Entries != 0):
				t.Errorf("kept without a validator: %d then %d requests, %d entries", first, second, c.Info().Entries)
			case tc.second >= 0 && second != tc.second:
				t.Errorf("second read: %d requests (first %d), want %d", second, first, tc.second)
			}
			// Keeps says the same, once the file was opened (and not
			// without a cache).
			h, _ := NewHTTP(tc.base)
			if h.Keeps("dir/model.bin") {
				t.Error("Keeps without a cache")
			}
			h.UseCache(NewCache(newMemStore(), 0, false))
			if _, err := Open(h, "dir/model.bin"); err != nil {
				t.Fatal(err)
			}
			if got := h.Keeps("dir/model.bin"); got != (tc.second >= 0) {
				t.Errorf("Keeps = %v, want %v", got, tc.second >= 0)
			}
		})
	}
	// The file changed (a new ETag): nothing of the old one is served.
	tag.Store(`"v1"`)
	c := NewCache(newMemStore(), 0, false)
	readAll(t, srv.URL+"/plain/", c, data, reqs)
	tag.Store(`"v2"`)
	if n := readAll(t, srv.URL+"/plain/", c, data, reqs); n < 3 {
		t.Errorf("a changed file was read from the cache (%d requests)", n)
	}
	// Bytes whose answer carried another ETag than the probe's are not
	// kept, nor read: the file changed between the two (input.changed).
	c = NewCache(newMemStore(), 0, false)
	h, _ := NewHTTP(srv.URL + "/plain/")
	h.UseCache(c)
	tag.Store(`"v1"`)
	f, err := Open(h, "x")
	if err != nil {
		t.Fatal(err)
	}
	tag.Store(`"v3"`)
	p := make([]byte, 2<<20)
	if _, err := f.ReadAt(p, 1<<20); !errors.Is(err, report.ErrChanged) {
		t.Fatalf("a read across an ETag change: %v", err)
	}
	if c.Info().Stored != 64<<10 {
		t.Errorf("stored %d bytes, want the probe's 64 kB only", c.Info().Stored)
	}
}

func TestCommitOf(t *testing.T) {
	for u, want := range map[string]string{
		"https://huggingface.co/a/b/resolve/0123456789abcdef0123456789abcdef01234567/x.bin": "0123456789abcdef0123456789abcdef01234567",
		"https://huggingface.co/a/b/resolve/main/x.bin":                                     "",
		"https://huggingface.co/a/b/resolve/0123456789ABCDEF0123456789abcdef01234567/x":     "",
		"https://example.com/0123456789abcdef0123456789abcdef01234567/x":                    "",
	} {
		if got := CommitOf(u); got != want {
			t.Errorf("CommitOf(%s) = %q", u, got)
		}
	}
}

// TestCacheReadAlignments: a cached entry of 3.5 blocks read at every kind
// of bounds — whole blocks, within one block, across an edge, from the
// middle of one block to the middle of another, to the entry's short last
// block — gives the origin's bytes with no fetch; a corrupt byte in a
// block wholly inside the read, or in one only partly inside it, is a miss
// (fetched again), whichever part of the read it is in.
func TestCacheReadAlignments(t *testing.T) {
	size := int64(3*block + block/2)
	o := &origin{data: pattern(int(size), 5)}
	reads := [][2]int64{
		{0, size}, {0, block}, {block, 2 * block}, {10, 100}, {block - 5, 10},
		{block / 2, 2 * block}, {7, 3*block - 14}, {3 * block, block / 2}, {3*block - 3, block/2 + 3}, {size - 1, 1},
	}
	for _, r := range reads {
		store := newMemStore()
		c := NewCache(store, 0, false)
		o.read(t, c, "k", 0, size) // fetched and kept whole
		o.fetched = nil
		o.read(t, c, "k", r[0], r[1])
		if len(o.fetched) != 0 {
			t.Errorf("read [%d, +%d): fetched %v from an intact entry", r[0], r[1], o.fetched)
		}
	}
	// A corrupt byte at each offset, read by ranges that take its block
	// wholly (interior) or partly (an edge): a miss, the bytes right.
	for _, bad := range []int64{block + 7, 3*block + 1, 5} {
		for _, r := range [][2]int64{{0, size}, {bad - 2, 4}, {bad/block*block - 3, block + 6}} {
			if r[0] < 0 || r[0]+r[1] > size {
				continue
			}
			store := newMemStore()
			c := NewCache(store, 0, false)
			o.read(t, c, "k", 0, size)
			store.m[store.names()[0]][bad] ^= 0x10
			o.fetched = nil
			o.read(t, c, "k", r[0], r[1]) // checks the bytes
			if len(o.fetched) == 0 || c.Info().Corrupt != 1 {
				t.Errorf("a corrupt byte at %d, read [%d, +%d): fetched %v, info %+v", bad, r[0], r[1], o.fetched, c.Info())
			}
		}
	}
}
