package runner

import (
	"crypto/sha256"
	"hash"
	"testing"
)

// spoiled is a SHA-256 that goes wrong at one length.
type spoiled struct {
	hash.Hash
	n, at int
}

func (s *spoiled) Write(b []byte) (int, error) { s.n += len(b); return s.Hash.Write(b) }
func (s *spoiled) Reset()                      { s.n = 0; s.Hash.Reset() }
func (s *spoiled) Sum(b []byte) []byte {
	out := s.Hash.Sum(b)
	if s.n == s.at {
		out[len(out)-1] ^= 1
	}
	return out
}

// TestCheckSHA256: Go's own SHA-256 passes the check; one wrong at a
// single length (a padding case, a block boundary, the big input) does not.
func TestCheckSHA256(t *testing.T) {
	if err := CheckSHA256(sha256.New, sha256.New); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{0, 55, 56, 64, 119, 300, 1 << 20} {
		bad := func() hash.Hash { return &spoiled{Hash: sha256.New(), at: at} }
		if CheckSHA256(bad, sha256.New) == nil {
			t.Errorf("a SHA-256 wrong at %d bytes passed the check", at)
		}
	}
	if SHA256.Name() == "" {
		t.Error("the digest slot has no name")
	}
}
