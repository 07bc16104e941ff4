package runner

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash"

	"github.com/kvit-s/clefcheck/wasm/kernels"
)

// SHA256 is the slot of the files' digest (package kernels): Go's
// crypto/sha256, and in the browser's engine worker the WebAssembly one
// (wasm/browser/worker), installed once CheckSHA256 accepts it.
var SHA256 = kernels.NewSlot[func() hash.Hash]("sha256", sha256.New)

// CheckSHA256 compares a SHA-256 with another (crypto/sha256) on inputs
// of every length from 0 to 300 bytes (each padding case, one to five
// blocks), written whole and in uneven pieces, on a 1 MiB input, and after
// a Reset: the digests must be equal.
func CheckSHA256(candidate, portable func() hash.Hash) error {
	data := CheckSHA256Data()
	sum := func(h hash.Hash, b []byte, piece int) []byte {
		h.Reset()
		for len(b) > 0 {
			n := min(piece, len(b))
			h.Write(b[:n])
			b = b[n:]
		}
		return h.Sum(nil)
	}
	c, p := candidate(), portable()
	for n := 0; n <= 300; n++ {
		for _, piece := range []int{n + 1, 7, 64, 65} {
			if got, want := sum(c, data[:n], piece), sum(p, data[:n], piece); !bytes.Equal(got, want) {
				return fmt.Errorf("%d bytes in pieces of %d: %x, want %x", n, piece, got, want)
			}
		}
	}
	for _, piece := range []int{len(data), 100003} {
		if got, want := sum(c, data, piece), sum(p, data, piece); !bytes.Equal(got, want) {
			return fmt.Errorf("1 MiB in pieces of %d: %x, want %x", piece, got, want)
		}
	}
	// Sum does not change the state: more data after it continues the hash.
	c.Reset()
	c.Write(data[:100])
	c.Sum(nil)
	c.Write(data[100:1000])
	if got, want := c.Sum(nil), sha256.Sum256(data[:1000]); !bytes.Equal(got, want[:]) {
		return fmt.Errorf("written after Sum: %x, want %x", got, want)
	}
	if c.Size() != sha256.Size || c.BlockSize() != sha256.BlockSize {
		return fmt.Errorf("size %d, block size %d", c.Size(), c.BlockSize())
	}
	return nil
}

// CheckSHA256Data is the 1 MiB input of CheckSHA256 (an xorshift
// sequence), for a check of its own to use the same bytes.
func CheckSHA256Data() []byte {
	data := make([]byte, 1<<20)
	x := uint32(2463534242)
	for i := range data {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		data[i] = byte(x)
	}
	return data
}
