//go:build js && wasm

package browser

import (
	"sync"
	"syscall/js"
)

// Large reads (a picked file's ranges, a URL's Range bodies) land in
// ArrayBuffers kept for reuse, filled by the browser with a BYOB reader
// (clefcheckReadInto in public/clefcheck.js), instead of a fresh
// ArrayBuffer per read: V8 maps and zeroes each new one, and on a virtual
// machine whose page faults are dear that cost more than the read itself.
// Reads under minPooled go as before.
const (
	minPooled  = 1 << 20
	poolStep   = 4 << 20   // capacities are multiples of it
	poolSlack  = 16 << 20  // a kept buffer serves a read up to this much smaller
	poolKept   = 160 << 20 // at most this many bytes kept
	poolBuffer = 8         // and at most this many buffers
)

var pool struct {
	sync.Mutex
	free  []js.Value
	bytes int
}

// TakeBuffer is an ArrayBuffer of at least n bytes: a kept one, or a new
// one (its capacity rounded up to poolStep).
func TakeBuffer(n int) js.Value {
	pool.Lock()
	for i, ab := range pool.free {
		if c := ab.Get("byteLength").Int(); c >= n && c <= n+poolSlack {
			pool.free = append(pool.free[:i], pool.free[i+1:]...)
			pool.bytes -= c
			pool.Unlock()
			return ab
		}
	}
	pool.Unlock()
	return js.Global().Get("ArrayBuffer").New((n + poolStep - 1) / poolStep * poolStep)
}

// GiveBuffer keeps ab for a later TakeBuffer (the oldest kept ones give
// way within the bounds; a detached buffer, of 0 bytes, is dropped).
func GiveBuffer(ab js.Value) {
	if !ab.Truthy() || ab.Get("byteLength").Type() != js.TypeNumber {
		return
	}
	c := ab.Get("byteLength").Int()
	if c < minPooled || c > poolKept {
		return
	}
	pool.Lock()
	defer pool.Unlock()
	pool.free = append(pool.free, ab)
	pool.bytes += c
	for len(pool.free) > poolBuffer || pool.bytes > poolKept {
		pool.bytes -= pool.free[0].Get("byteLength").Int()
		pool.free = pool.free[1:]
	}
}

// pooled tells whether a read of n bytes goes through the kept buffers:
// it is large enough, and clefcheck.js has the reader.
func pooled(n int, helper string) bool {
	return n >= minPooled && js.Global().Get(helper).Type() == js.TypeFunction
}
