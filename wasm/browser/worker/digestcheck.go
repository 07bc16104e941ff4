//go:build js && wasm

package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/runner"
)

// The digest worker's self-checks: before its hashes are used, they are
// compared with crypto/sha256 (a wrong SHA-256 kernel would otherwise
// report every file tampered).

// checkFileLengths are the lengths of the Blobs checkFiles hashes in
// pieces of 7 and 64 bytes: none, less than a piece, and around each
// multiple of a piece and of the 64-byte block, 55 and 56 bytes (where the
// padding takes a block of its own) among them. Every length up to 200
// bytes, as it once was, made about 3,400 Blob reads of a few bytes, which
// kept the browser's file reading busy for 4 s after the page opened (in
// the full-twin bench they were still going 1.9 s into the quick audit of
// picked files, each read of the audit's spans waiting among them); these
// make 266.
var checkFileLengths = []int{0, 1, 6, 7, 8, 13, 14, 15, 55, 56, 57, 63, 64, 65, 70, 71, 72, 119, 120, 127, 128, 129, 200}

// checkFiles compares the worker's hashes of whole Blobs with crypto/sha256,
// all asked at once: the checkFileLengths read 7 and 64 bytes at a time,
// and 1 MiB read 100,003 bytes and 1 MiB at a time.
func (d *digestWorker) checkFiles() error {
	data := runner.CheckSHA256Data()
	type ask struct {
		what string
		wait func(context.Context) ([]byte, float64, error)
		want [sha256.Size]byte
	}
	var asks []ask
	blob := func(b []byte) js.Value {
		u8 := js.Global().Get("Uint8Array").New(len(b))
		js.CopyBytesToJS(u8, b)
		return js.Global().Get("Blob").New([]any{u8})
	}
	for _, n := range checkFileLengths {
		for _, chunk := range []int{7, 64} {
			asks = append(asks, ask{fmt.Sprintf("%d bytes read %d at a time", n, chunk), d.hashFile(blob(data[:n]), chunk, nil), sha256.Sum256(data[:n])})
		}
	}
	for _, chunk := range []int{100003, 1 << 20} {
		asks = append(asks, ask{fmt.Sprintf("1 MiB read %d at a time", chunk), d.hashFile(blob(data), chunk, nil), sha256.Sum256(data)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), digestTimeout)
	defer cancel()
	for _, a := range asks {
		got, _, err := a.wait(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", a.what, err)
		}
		if !bytes.Equal(got, a.want[:]) {
			return fmt.Errorf("%s: %x, want %x", a.what, got, a.want)
		}
	}
	return nil
}

// check is runner.CheckSHA256's comparison with crypto/sha256, its cases
// asked all at once: every length from 0 to 300 bytes in pieces of 7, 64,
// 65 and whole, 1 MiB whole and in pieces of 100,003, and more written
// after a Sum. (One at a time, each Sum a round trip to the worker, the
// check took longer than a page takes to start its first audit.)
func (d *digestWorker) check(f func() hash.Hash) error {
	data := runner.CheckSHA256Data()
	type ask struct {
		what string
		h    *remoteSHA256
		c    <-chan digestReply
		want [sha256.Size]byte
	}
	var asks []ask
	start := func(what string, b []byte, piece int) *remoteSHA256 {
		h := f().(*remoteSHA256)
		for len(b) > 0 {
			n := min(piece, len(b))
			h.Write(b[:n])
			b = b[n:]
		}
		return h
	}
	for n := 0; n <= 300; n++ {
		for _, piece := range []int{n + 1, 7, 64, 65} {
			what := fmt.Sprintf("%d bytes in pieces of %d", n, piece)
			h := start(what, data[:n], piece)
			asks = append(asks, ask{what, h, h.sumLater(), sha256.Sum256(data[:n])})
		}
	}
	for _, piece := range []int{len(data), 100003} {
		what := fmt.Sprintf("1 MiB in pieces of %d", piece)
		h := start(what, data, piece)
		asks = append(asks, ask{what, h, h.sumLater(), sha256.Sum256(data)})
	}
	h := start("", data[:100], 100)
	asks = append(asks, ask{"100 bytes", h, h.sumLater(), sha256.Sum256(data[:100])})
	h.Write(data[100:1000])
	asks = append(asks, ask{"written after Sum", h, h.sumLater(), sha256.Sum256(data[:1000])})
	for _, a := range asks {
		if a.h.err != nil {
			return fmt.Errorf("%s: %w", a.what, a.h.err)
		}
		got, err := d.wait(a.h.id, a.c)
		if err != nil {
			return fmt.Errorf("%s: %w", a.what, err)
		}
		if !bytes.Equal(got, a.want[:]) {
			return fmt.Errorf("%s: %x, want %x", a.what, got, a.want)
		}
	}
	for _, a := range asks {
		d.w.Call("postMessage", map[string]any{"id": a.h.id, "drop": true})
	}
	return nil
}
