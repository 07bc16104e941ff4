//go:build js && wasm

package worker

import (
	"io/fs"
	"sync"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// The cache of byte ranges read from URLs (source.Cache): one per engine
// worker, in the Origin Private File System folder cacheDir
// (browser.OPFS), bounded by source.DefaultCacheMax. Every URL input the
// engine worker opens reads through it (a file at a Hub commit, or with a
// strong ETag: source's rules), the dealer's spans too; the pool workers
// read it too (read-only: they write nothing, evict nothing). The page
// shows it and clears it with a cache job (jobs.KindCache).

// cacheDir is the cache's folder in the origin's private file system.
const cacheDir = "clefcheck-cache"

var (
	cacheOnce sync.Once
	theCache  *source.Cache
	cacheWhy  string // why there is none
)

// engineCache is the engine worker's cache (nil, and why, when this
// browser has no private file system for it).
func engineCache() (*source.Cache, string) {
	cacheOnce.Do(func() { theCache, cacheWhy = openCache(false) })
	return theCache, cacheWhy
}

// poolCache is a pool worker's view of the cache, read-only (nil if none).
var poolCache = sync.OnceValue(func() *source.Cache { c, _ := openCache(true); return c })

func openCache(readOnly bool) (*source.Cache, string) {
	store, err := browser.OpenOPFS(cacheDir, readOnly)
	if err != nil {
		return nil, "no cache: " + err.Error()
	}
	return source.NewCache(store, source.DefaultCacheMax, readOnly), ""
}

// withCache makes an input's source read through the engine worker's
// cache (a URL's: source.HTTP, or a Hub repository's, which embeds it).
func withCache(fsys fs.FS) {
	if u, ok := fsys.(interface{ UseCache(*source.Cache) }); ok {
		if c, _ := engineCache(); c != nil {
			u.UseCache(c)
		}
	}
}

// cacheJob answers a cache job: what the cache holds, after clearing it
// when asked.
func cacheJob(spec *jobs.Spec) (*jobs.Output, error) {
	c, why := engineCache()
	if c == nil {
		return &jobs.Output{Cache: &jobs.CacheInfo{Why: why}}, nil
	}
	var err error
	if spec.Clear {
		err = c.Clear()
	}
	i := c.Info()
	return &jobs.Output{Cache: &jobs.CacheInfo{On: i.Off == "", Why: i.Off, Bytes: i.Bytes, Max: i.Max, Entries: i.Entries,
		Hits: i.Hits, Fetched: i.Fetched}}, err
}

// cacheHits is how many bytes the engine worker's cache served so far.
func cacheHits() int64 {
	if c, _ := engineCache(); c != nil {
		return c.Info().Hits
	}
	return 0
}

// cacheStored is how many bytes the engine worker's cache kept so far.
func cacheStored() int64 {
	if c, _ := engineCache(); c != nil {
		return c.Info().Stored
	}
	return 0
}

// cacheWriter names the thread that writes the cache's entries:
// cachewrite.js, or this worker where that did not start
// (clefcheckCacheWriterName in public/clefcheck.js).
func cacheWriter() string {
	if f := js.Global().Get("clefcheckCacheWriterName"); f.Type() == js.TypeFunction {
		return f.Invoke().String()
	}
	return "the engine worker"
}
