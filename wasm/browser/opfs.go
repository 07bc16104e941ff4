//go:build js && wasm

package browser

import (
	"errors"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/source"
)

// OPFS is a folder of the Origin Private File System as a source.Store:
// the engine workers' cache of byte ranges read from URLs. Its entries are
// read and written with FileSystemSyncAccessHandle, which only dedicated
// workers have (nested ones too): reads in "read-only" mode, so that the
// engine worker and the audit's pool workers read the same entry at once;
// each entry is written once, by the engine worker. The JavaScript is
// clefcheckCacheOpen in public/clefcheck.js.
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

// Write creates (or replaces) entry name with the parts, one after the other.
func (o *OPFS) Write(name string, parts ...[]byte) error {
	arr := js.Global().Get("Array").New()
	for _, p := range parts {
		u8 := js.Global().Get("Uint8Array").New(len(p))
		js.CopyBytesToJS(u8, p)
		arr.Call("push", u8)
	}
	_, err := Await(o.dir.Call("write", name, arr))
	return err
}

// Remove deletes entry name.
func (o *OPFS) Remove(name string) error {
	_, err := Await(o.dir.Call("remove", name))
	return err
}
