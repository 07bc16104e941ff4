//go:build js && wasm

package worker

import "github.com/kvit-s/clefcheck/wasm/audit"

// How much of the file the dealer hands out at a time: the segments'
// size, and how many each worker holds, by source.

// segmentBytes is about how much of the file one deal covers; readAhead
// is the HTTP read-ahead window of a worker, for the spans the dealer
// could not fetch for it.
const (
	segmentBytes = 32 << 20
	readAhead    = 32 << 20
)

// defaultDepth is the segments each worker holds by default: one it
// computes, three downloading. Two (one and one) left the link idle while
// the digest waited for the spans in file order: the twin's randomized
// audit through a 125 MB/s link took 22.3 s, 1.61× the bare download;
// with four, 16.2 s (1.20×), and the quick audit 1.09×.
const defaultDepth = 4

// windowDepth is the depth for n workers whose spans, read from a URL,
// pass the digest (or the cache) in file order: all but one of the spans in
// flight may come early and must fit in the digest's window
// (digestWindow), or the digest drops them and every span after them, and
// reads them all again at the end (with depth 4 the twin's randomized
// audit at a commit read 1.0 GB of its 1.4 GB again).
func windowDepth(n int) int {
	return min(defaultDepth, max(1, (digestWindow/segmentBytes+1)/max(1, n)))
}

// fileDepth is the depth for picked local files whose spans feed no
// digest: a File's slice arrives in a few milliseconds, not over a link,
// so one span waiting behind the one computing keeps a worker fed, and
// more spans in flight only crowd the two cores with reads and copies.
// Measured on the twin's quick audit from picked files (2 cores, 2
// workers, later rounds): depth 4, 4.30-4.63 s; 3, 4.67 s; 2, 3.47-3.88 s;
// 1, 3.62-3.89 s.
const fileDepth = 2

// dealDepth is how many segments each of n workers holds: the caller's
// override when set; for a URL read through the engine worker's source
// (url) whose spans pass the digest in file order, what the digest's
// window takes (windowDepth); for picked local files whose spans feed no
// digest and pass no observers, fileDepth; otherwise defaultDepth (a link
// to keep busy, or spans that feed the picked files' digest).
func dealDepth(n int, url, local, observed, feeding bool, override int) int {
	switch {
	case override > 0:
		return override
	case url && observed:
		return windowDepth(n)
	case local && !feeding && !observed:
		return fileDepth
	}
	return defaultDepth
}

// earlyReads is how many spans the dealer reads before its n workers are
// ready: as many as they will hold (depth each), and where the spans pass
// the digest in file order, no more than its window takes with one more
// span on its way (read all at once, all but the first may come early).
func earlyReads(n, depth int, observed bool) int {
	if observed {
		return min(n*depth, digestWindow/segmentBytes+1)
	}
	return n * depth
}

// leadSegments splits the first n segments (one for each of n workers)
// into one segment per pair, and deals those first: a worker's first bytes
// come in one pair's read, not a whole segment's. For spans that pass no
// digest and no observer (picked local files, a URL the cache does not
// keep), where the pool's start waits on nothing but those reads: on the
// twin (2 cores) its four first 32 MB reads from picked files, at once,
// took 130-200 ms before either worker had a byte; from a plain URL the
// eight early 32 MB reads shared the link, and the first pair was checked
// 560 ms after the deal began, 290 ms with the lead segments. A pair (7.5
// MB) comes in a fraction of that. The pairs and their order within the
// file are kept.
func leadSegments(segs [][]audit.Job, n int) [][]audit.Job {
	k := min(max(n, 0), len(segs))
	out := make([][]audit.Job, 0, len(segs)+3*k)
	for _, s := range segs[:k] {
		for i := range s {
			out = append(out, s[i:i+1:i+1])
		}
	}
	return append(out, segs[k:]...)
}
