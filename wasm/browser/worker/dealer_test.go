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

// TestEarlyReads: the spans read before the workers are ready are as many
// as the workers will hold; where the digest takes them in file order, all
// but the first of them fit in its window.
func TestEarlyReads(t *testing.T) {
	for n := 1; n <= 16; n++ {
		d := windowDepth(n)
		k := earlyReads(n, d, true)
		if k < 1 || k > n*d || int64(k-1)*segmentBytes > digestWindow {
			t.Errorf("%d workers, depth %d: %d early reads, %d MiB early at most, the window %d MiB", n, d, k, int64(k-1)*segmentBytes>>20, digestWindow>>20)
		}
		if k < n*d && int64(k)*segmentBytes <= digestWindow {
			t.Errorf("%d workers, depth %d: %d early reads, but %d would fit", n, d, k, k+1)
		}
		if u := earlyReads(n, defaultDepth, false); u != n*defaultDepth {
			t.Errorf("%d workers, not observed: %d early reads, want %d", n, u, n*defaultDepth)
		}
	}
}
