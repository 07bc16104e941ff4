package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestDigestReadAhead: a local file above aheadMin is hashed by the
// read-ahead goroutine from its own handle — the check reading out of order
// and closing its file early — and Finish reads nothing again.
func TestDigestReadAhead(t *testing.T) {
	old := aheadMin
	aheadMin = 1 << 20
	defer func() { aheadMin = old }()
	dir := t.TempDir()
	data := make([]byte, 3*aheadChunk+12345)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDigestFS(os.DirFS(dir), 0)
	f, err := d.Open("big.bin")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1000)
	f.(io.ReaderAt).ReadAt(buf, int64(len(data)-1000)) // out of order
	f.Close()                                          // the check is done before the hasher
	files, sum, err := d.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := sha256.Sum256(data)
	if len(files) != 1 || files[0].SHA256 != hex.EncodeToString(want[:]) {
		t.Fatalf("digest %+v, want %x", files, want)
	}
	if sum.Reread != 0 {
		t.Fatalf("Finish read %d bytes again: the read-ahead hasher did not finish the file", sum.Reread)
	}
}
