//go:build js && wasm

package worker

import "testing"

// TestWindowDepth: with the digest taking a URL's spans in file order, the
// spans in flight but one fit in its window, for any number of workers
// (one span each at least).
func TestWindowDepth(t *testing.T) {
	for n := 1; n <= 16; n++ {
		d := windowDepth(n)
		if d < 1 || d > defaultDepth || (d > 1 && (d*n-1)*segmentBytes > digestWindow) {
			t.Errorf("%d workers: depth %d, %d MiB early at most, the window %d MiB", n, d, (d*n-1)*segmentBytes>>20, digestWindow>>20)
		}
		if d < defaultDepth && ((d+1)*n-1)*segmentBytes <= digestWindow {
			t.Errorf("%d workers: depth %d, but %d would fit", n, d, d+1)
		}
	}
	if windowDepth(2) != 3 {
		t.Errorf("2 workers: depth %d, want 3", windowDepth(2))
	}
}
