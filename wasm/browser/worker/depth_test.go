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

// TestDealDepth: the depth follows the source. Picked files feeding no
// digest hold fileDepth, fewer than a link's defaultDepth; a URL passing
// the digest in file order holds what the window takes; files feeding the
// digest and unobserved URLs keep defaultDepth; an override always wins.
func TestDealDepth(t *testing.T) {
	if fileDepth >= defaultDepth || fileDepth < 1 {
		t.Fatalf("fileDepth %d, defaultDepth %d", fileDepth, defaultDepth)
	}
	for n := 1; n <= 8; n++ {
		cases := []struct {
			url, local, observed, feeding bool
			want                          int
		}{
			{false, true, false, false, fileDepth},
			{false, true, false, true, defaultDepth},
			{false, true, true, false, defaultDepth},
			{true, false, false, false, defaultDepth},
			{true, false, true, false, windowDepth(n)},
			// A URL the pool workers read themselves (no source in the
			// engine worker): a link, not a file.
			{false, false, false, false, defaultDepth},
		}
		for _, c := range cases {
			if got := dealDepth(n, c.url, c.local, c.observed, c.feeding, 0); got != c.want {
				t.Errorf("%d workers, %+v: depth %d, want %d", n, c, got, c.want)
			}
			if got := dealDepth(n, c.url, c.local, c.observed, c.feeding, 7); got != 7 {
				t.Errorf("%d workers, %+v, override 7: depth %d", n, c, got)
			}
		}
	}
}
