//go:build js && wasm

package worker

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/audit"
)

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

// TestLeadSegments: the first segment of each worker is dealt pair by pair
// ahead of the rest; every pair is dealt once, the rest in their order.
func TestLeadSegments(t *testing.T) {
	var jobs []audit.Job
	for i := range 40 {
		jobs = append(jobs, audit.Job{Module: fmt.Sprintf("m%02d", i), File: "a.safetensors", Begin: int64(i) * 100, End: int64(i+1) * 100, Bytes: 100})
	}
	segs := audit.Segments(jobs, 400) // ten segments of four pairs
	for _, n := range []int{0, 1, 2, 8, 10, 12} {
		out := leadSegments(segs, n)
		k := min(n, len(segs))
		if len(out) != len(segs)+3*k {
			t.Errorf("%d workers: %d segments, want %d", n, len(out), len(segs)+3*k)
			continue
		}
		var lead, flat []string
		for i, s := range out {
			if i < 4*k && len(s) != 1 {
				t.Errorf("%d workers: lead segment %d holds %d pairs", n, i, len(s))
			}
			for _, j := range s {
				flat = append(flat, j.Module)
			}
		}
		for _, s := range segs[:k] {
			for _, j := range s {
				lead = append(lead, j.Module)
			}
		}
		var want []string
		for _, s := range segs {
			for _, j := range s {
				want = append(want, j.Module)
			}
		}
		if !slices.Equal(flat, want) {
			t.Errorf("%d workers: dealt %v, want %v", n, flat, want)
		}
		if !slices.Equal(flat[:len(lead)], lead) {
			t.Errorf("%d workers: the lead pairs %v do not come first", n, lead)
		}
		for i, s := range out[4*k:] {
			if len(s) != len(segs[k+i]) || &s[0] != &segs[k+i][0] {
				t.Errorf("%d workers: segment %d changed", n, k+i)
			}
		}
	}
}
