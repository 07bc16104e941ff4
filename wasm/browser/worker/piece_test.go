//go:build js && wasm

package worker

import (
	"bytes"
	"syscall/js"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/browser/msg"
)

// preloads records what a pool worker preloads.
type preloads struct {
	name string
	off  int64
	data []byte
}

func (p *preloads) Preload(name string, off int64, data []byte) {
	p.name, p.off, p.data = name, off, data
}

// TestPieces: a span that comes in pieces is put together in order and
// preloaded for the pairs that say so; each piece's buffer goes back to
// the dealer (Spent, with the bytes it held); pieces out of order, of
// another span, or a pairs that does not match leave the span unused (the
// session then reads it itself), never a span with a gap or other bytes.
func TestPieces(t *testing.T) {
	var spent []msg.Spent
	prev := js.Global().Get("postMessage")
	post := js.FuncOf(func(_ js.Value, args []js.Value) any {
		spent = append(spent, msg.SpentOf(args[0]))
		return nil
	})
	js.Global().Set("postMessage", post)
	t.Cleanup(func() { js.Global().Set("postMessage", prev); post.Release() })

	data := make([]byte, 10<<20+5)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	const off = 1000
	pieces := func(file string, b []byte) []msg.Piece {
		var out []msg.Piece
		for at := 0; at < len(b); at += msg.PieceBytes {
			n := min(msg.PieceBytes, len(b)-at)
			u8 := js.Global().Get("Uint8Array").New(msg.PieceBytes)
			js.CopyBytesToJS(u8, b[at:at+n])
			out = append(out, msg.Piece{Buf: u8.Get("buffer"), File: file, Offset: off, At: int64(at), Len: int64(n), Total: int64(len(b))})
		}
		return out
	}
	pairs := msg.Pairs{File: "a.safetensors", Offset: off, Len: int64(len(data)), Pieces: 3}

	pre := &preloads{}
	w := &poolWorker{pre: pre}
	ps := pieces("a.safetensors", data)
	if len(ps) != 3 {
		t.Fatalf("%d pieces, want 3", len(ps))
	}
	for _, p := range ps {
		w.piece(msg.PieceOf(p.Value()))
	}
	if !w.takePieces(pairs) || pre.name != "a.safetensors" || pre.off != off || !bytes.Equal(pre.data, data) {
		t.Fatalf("in order: preloaded %q at %d, %d bytes (equal %v), want the span", pre.name, pre.off, len(pre.data), bytes.Equal(pre.data, data))
	}
	if len(spent) != 3 {
		t.Fatalf("%d buffers handed back, want 3", len(spent))
	}
	for i, s := range spent {
		if s.File != "a.safetensors" || s.Offset != off+int64(i)*msg.PieceBytes || s.Len != ps[i].Len || s.Buf.Get("byteLength").Int() != msg.PieceBytes {
			t.Errorf("spent %d: %s at %d, %d bytes, a buffer of %d", i, s.File, s.Offset, s.Len, s.Buf.Get("byteLength").Int())
		}
	}

	bad := map[string]func() ([]msg.Piece, msg.Pairs){
		"a piece missing": func() ([]msg.Piece, msg.Pairs) {
			p := pieces("a.safetensors", data)
			return []msg.Piece{p[0], p[2]}, pairs
		},
		"out of order": func() ([]msg.Piece, msg.Pairs) {
			p := pieces("a.safetensors", data)
			return []msg.Piece{p[0], p[2], p[1]}, pairs
		},
		"another file's piece": func() ([]msg.Piece, msg.Pairs) {
			p, q := pieces("a.safetensors", data), pieces("b.safetensors", data)
			return []msg.Piece{p[0], q[1], p[2]}, pairs
		},
		"the pairs say another span": func() ([]msg.Piece, msg.Pairs) {
			q := pairs
			q.Offset++
			return pieces("a.safetensors", data), q
		},
		"the pairs say a shorter span": func() ([]msg.Piece, msg.Pairs) {
			q := pairs
			q.Len--
			return pieces("a.safetensors", data), q
		},
		"a piece longer than its buffer": func() ([]msg.Piece, msg.Pairs) {
			p := pieces("a.safetensors", data)
			p[1].Len = msg.PieceBytes + 1
			return p, pairs
		},
		"a span too large to take": func() ([]msg.Piece, msg.Pairs) {
			p := pieces("a.safetensors", data)
			for i := range p {
				p[i].Total = 1 << 40
			}
			q := pairs
			q.Len = 1 << 40
			return p, q
		},
	}
	for name, f := range bad {
		pre := &preloads{}
		w := &poolWorker{pre: pre}
		ps, m := f()
		for _, p := range ps {
			w.piece(msg.PieceOf(p.Value()))
		}
		if w.takePieces(m) || pre.data != nil {
			t.Errorf("%s: preloaded %d bytes, want none", name, len(pre.data))
		}
		if cap(w.spanBuf) > 64<<20 {
			t.Errorf("%s: took %d bytes", name, cap(w.spanBuf))
		}
	}
}
