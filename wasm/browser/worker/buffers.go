//go:build js && wasm

package worker

import (
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/browser/msg"
)

// The dealer's JavaScript buffers: spans and pieces (msg.Piece) read into
// buffers the pool workers hand back (msg.Spent), kept for the next reads.

// spanBuffer is an ArrayBuffer of at least n bytes to send a span in: one a
// pool worker handed back (msg.Spent), or a new one in steps of 16 MiB. A
// fresh ArrayBuffer of 32 MB costs the engine worker several times the
// copy into it (V8 maps and zeroes its memory each time).
func (p *AuditPool) spanBuffer(n int) js.Value {
	p.bufMu.Lock()
	for i, ab := range p.spent {
		if c := ab.Get("byteLength").Int(); c >= n && c < n+16<<20 {
			p.spent = append(p.spent[:i], p.spent[i+1:]...)
			p.bufMu.Unlock()
			return ab
		}
	}
	p.bufMu.Unlock()
	return js.Global().Get("ArrayBuffer").New((n + 16<<20 - 1) &^ (16<<20 - 1))
}

// pieceBuffers is a JavaScript Array of ArrayBuffers of msg.PieceBytes,
// enough to hold n bytes: ones pool workers handed back, or new ones.
func (p *AuditPool) pieceBuffers(n int) js.Value {
	bufs := js.Global().Get("Array").New()
	for k := (n + msg.PieceBytes - 1) / msg.PieceBytes; k > 0; k-- {
		p.bufMu.Lock()
		var ab js.Value
		if last := len(p.pieces) - 1; last >= 0 {
			ab, p.pieces = p.pieces[last], p.pieces[:last]
		}
		p.bufMu.Unlock()
		if !ab.Truthy() {
			ab = js.Global().Get("ArrayBuffer").New(msg.PieceBytes)
		}
		bufs.Call("push", ab)
	}
	return bufs
}

// maxPieces is how many free pieces the dealer keeps at most: 8 spans of
// the largest it reads whole (2·segmentBytes), in pieces. It holds only as
// many as were ever in flight at once (2 workers holding 2 segments each
// from picked files: 32; 4 each from a URL: 64).
const maxPieces = 8 * (2 * segmentBytes / msg.PieceBytes)

// keepSpent keeps a span buffer a pool worker handed back (a few: about
// as many as there are spans in flight).
func (p *AuditPool) keepSpent(ab js.Value) {
	if ab.InstanceOf(js.Global().Get("Array")) { // pieces
		for i := range ab.Length() {
			p.keepSpent(ab.Index(i))
		}
		return
	}
	if !ab.Truthy() || ab.Get("byteLength").Type() != js.TypeNumber || ab.Get("byteLength").Int() == 0 {
		return // a transferred (detached) buffer is 0 bytes long
	}
	p.bufMu.Lock()
	defer p.bufMu.Unlock()
	if ab.Get("byteLength").Int() == msg.PieceBytes {
		if len(p.pieces) < maxPieces {
			p.pieces = append(p.pieces, ab)
		}
		return
	}
	p.spent = append(p.spent, ab)
	if len(p.spent) > 8 {
		p.spent = p.spent[1:]
	}
}

// room is how many bytes into holds: an ArrayBuffer, or an Array of them
// (pieceBuffers); 0 for anything else.
func room(into js.Value) int {
	if into.InstanceOf(js.Global().Get("Array")) {
		n := 0
		for i := range into.Length() {
			n += room(into.Index(i))
		}
		return n
	}
	if !into.Truthy() || into.Get("byteLength").Type() != js.TypeNumber {
		return 0
	}
	return into.Get("byteLength").Int()
}
