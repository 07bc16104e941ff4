//go:build js && wasm

package browser

import (
	"errors"
	"sync"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/source"
)

// OPFS is a folder of the Origin Private File System as a source.Store:
// the engine workers' cache of byte ranges read from URLs. Its entries are
// read and written with FileSystemSyncAccessHandle, which only dedicated
// workers have (nested ones too): reads in "read-only" mode, so that the
// engine worker and the audit's pool workers read the same entry at once;
// each entry is written once, for the engine worker by the cache's writer
// (public/cachewrite.js, a worker of its own: a synchronous write blocks
// its thread, and the engine worker's deals the audit's spans). The
// JavaScript is clefcheckCacheOpen in public/clefcheck.js.
//
// Every operation gives up (an error) when the browser's storage has not
// answered within a while (seconds; a stuck one has been seen while
// another worker listed the folder): the cache then turns itself off.
type OPFS struct {
	dir       js.Value
	namesOnly bool
}

// OpenOPFS opens (creating it) the folder name of the origin's private
// file system; it fails where there is none, or no sync access handles
// (a page, an old browser, a private window that refuses storage). With
// namesOnly, List names the entries without opening them (sizes -1): a
// read-only cache lists so while the engine worker writes.
func OpenOPFS(name string, namesOnly bool) (*OPFS, error) {
	open := js.Global().Get("clefcheckCacheOpen")
	if open.Type() != js.TypeFunction {
		return nil, errors.New("clefcheck.js has no clefcheckCacheOpen")
	}
	dir, err := Await(open.Invoke(name))
	if err != nil {
		return nil, err
	}
	return &OPFS{dir: dir, namesOnly: namesOnly}, nil
}

// List names the folder's entries with their sizes and times of writing.
func (o *OPFS) List() ([]source.StoreEntry, error) {
	v, err := Await(o.dir.Call("list", !o.namesOnly))
	if err != nil {
		return nil, err
	}
	out := make([]source.StoreEntry, 0, v.Length())
	for i := 0; i < v.Length(); i++ {
		e := v.Index(i)
		out = append(out, source.StoreEntry{Name: e.Index(0).String(), Size: int64(e.Index(1).Float()),
			Time: time.UnixMilli(int64(e.Index(2).Float()))})
	}
	return out, nil
}

// ReadAt reads entry name at off into p (fewer bytes at its end).
func (o *OPFS) ReadAt(name string, p []byte, off int64) (int, error) {
	v, err := Await(o.dir.Call("read", name, float64(off), len(p)))
	if err != nil {
		return 0, err
	}
	return js.CopyBytesToGo(p, v), nil
}

// Write creates (or replaces) entry name with the parts, one after the
// other. The bytes go through staging buffers kept for the next write: a
// fresh ArrayBuffer of a cached range's 32 MB costs several times the copy
// into it (V8 maps and zeroes its memory each time).
func (o *OPFS) Write(name string, parts ...[]byte) error {
	arr := js.Global().Get("Array").New()
	for _, p := range parts {
		ab := staging.get(len(p))
		u8 := js.Global().Get("Uint8Array").New(ab, 0, len(p))
		js.CopyBytesToJS(u8, p)
		arr.Call("push", u8)
	}
	back, err := Await(o.dir.Call("write", name, arr))
	if err == nil && back.Type() == js.TypeObject {
		// Only a write that finished gives its buffers back: one that timed
		// out may still be writing from them. They come back from the
		// cache's writer (transferred there and back), so these are the
		// ones to keep, not held.
		for i := 0; i < back.Length(); i++ {
			staging.put(back.Index(i))
		}
	}
	return err
}

// staging is the OPFS writes' buffers: ArrayBuffers in steps of 4 MiB, a
// few of them kept.
var staging stagingBuffers

type stagingBuffers struct {
	mu   sync.Mutex
	free []js.Value
}

const (
	stagingStep = 4 << 20
	stagingKept = 4
)

// get is an ArrayBuffer of at least n bytes.
func (s *stagingBuffers) get(n int) js.Value {
	s.mu.Lock()
	for i, ab := range s.free {
		if c := ab.Get("byteLength").Int(); c >= n && c < n+2*stagingStep {
			s.free = append(s.free[:i], s.free[i+1:]...)
			s.mu.Unlock()
			return ab
		}
	}
	s.mu.Unlock()
	return js.Global().Get("ArrayBuffer").New((n + stagingStep - 1) / stagingStep * stagingStep)
}

// put keeps ab for a later write (the oldest dropped beyond stagingKept).
func (s *stagingBuffers) put(ab js.Value) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = append(s.free, ab)
	if len(s.free) > stagingKept {
		s.free = s.free[1:]
	}
}

// Remove deletes entry name.
func (o *OPFS) Remove(name string) error {
	_, err := Await(o.dir.Call("remove", name))
	return err
}
