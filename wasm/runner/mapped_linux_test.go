//go:build linux

package runner

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func mappedFile(t *testing.T, n int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "f.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// TestMappedViews: windows at offsets that are not page-aligned, of every
// kind of length, hash to crypto/sha256's digest of the same bytes.
func TestMappedViews(t *testing.T) {
	f, data := mappedFile(t, 3<<20+777)
	view := mapView(f)
	if view == nil {
		t.Fatal("no mapped views of a regular file")
	}
	for _, w := range [][2]int{{0, 1}, {1, 4095}, {4095, 2}, {12345, 1 << 20}, {len(data) - 10, 10}, {0, len(data)}} {
		b, release, err := view(int64(w[0]), w[1])
		if err != nil {
			t.Fatal(err)
		}
		h := SHA256.Get()()
		if err := hashMapped(h, b); err != nil {
			t.Fatal(err)
		}
		release()
		if want := sha256.Sum256(data[w[0] : w[0]+w[1]]); !bytes.Equal(h.Sum(nil), want[:]) {
			t.Errorf("window %v: digest differs", w)
		}
	}
}

// TestMappedFault: a file truncated under its mapping faults (SIGBUS) when
// the lost pages are read: hashMapped recovers it as errFault and leaves
// the hash as it was, and the read-ahead hasher then stops at the bytes it
// could hash, for Finish to read again and report.
func TestMappedFault(t *testing.T) {
	f, data := mappedFile(t, 4<<20)
	b, release, err := mapView(f)(0, len(data))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := os.Truncate(f.Name(), 1<<20); err != nil {
		t.Fatal(err)
	}
	h := SHA256.Get()()
	h.Write(data[:100])
	if err := hashMapped(h, b); !errors.Is(err, errFault) {
		t.Fatalf("hashMapped over lost pages: %v, want errFault", err)
	}
	if want := sha256.Sum256(data[:100]); !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatal("after the fault the hash is not as it was before the window")
	}

	// The read-ahead hasher over a file that shrank before it started.
	g, data2 := mappedFile(t, 3*aheadChunk+5)
	tr := newTracker(SHA256.Get()(), int64(len(data2)), 0, nil, "f.bin", false)
	tr.ahead = make(chan struct{})
	if err := os.Truncate(g.Name(), int64(aheadChunk+aheadChunk/2)); err != nil {
		t.Fatal(err)
	}
	tr.readAhead(g) // returns at the short read
	if got := tr.next.Load(); got != int64(aheadChunk) {
		t.Fatalf("the hasher stopped at %d, want %d (the one whole window left)", got, aheadChunk)
	}
	if want := sha256.Sum256(data2[:aheadChunk]); !bytes.Equal(tr.h.Sum(nil), want[:]) {
		t.Fatal("the read-ahead hash is not that of the bytes it says it hashed")
	}
}
