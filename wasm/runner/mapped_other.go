//go:build !linux

package runner

import (
	"errors"
	"hash"
)

// Elsewhere (the browser, other systems) the read-ahead digest reads by
// ReaderAt (see mapped_linux.go).

func mapView(readerAtCloser) func(off int64, n int) ([]byte, func(), error) { return nil }

func hashMapped(hash.Hash, []byte) error { return errors.New("no mapped reads here") }

func canMap(hash.Hash) bool { return false }
