//go:build js && wasm

package worker

import (
	"context"
	"errors"
	"slices"

	"github.com/kvit-s/clefcheck/wasm/audit"
)

// dealPlan is how the dealer deals an audit's pairs: the segments, the
// spans it reads for them, and the first of those reads, started. Prefetch
// makes it while the engine worker still reads the extraction report;
// Remote otherwise.
type dealPlan struct {
	ctx      context.Context
	modules  []string // the jobs', in order: Remote must get these
	n, depth int      // workers, and segments each holds at a time
	segs     [][]audit.Job
	from     map[int]int64 // where a segment's span starts, when not at its first pair (fileOrder)
	feeding  bool          // picked files hashed from the spans
	early    map[int]chan spanRead
}

// workersFor is how many pool workers check n pairs.
func (p *AuditPool) workersFor(n int) int {
	if p.pre != nil {
		return len(p.pre) // started ahead: all of them work
	}
	return min(max(1, p.N), max(1, n))
}

// plan plans the jobs' deal and starts its first reads.
func (p *AuditPool) plan(ctx context.Context, jobs []audit.Job) *dealPlan {
	d := &dealPlan{ctx: ctx, n: p.workersFor(len(jobs)), early: map[int]chan spanRead{}}
	for _, j := range jobs {
		d.modules = append(d.modules, j.Module)
	}
	// Neighbouring pairs together, in file order, in segments of about
	// segmentBytes, biggest first, each worker holding up to depth of them.
	d.segs = audit.Segments(jobs, segmentBytes)
	d.feeding = p.hasFeeds()
	if p.observed() || d.feeding {
		d.from = fileOrder(d.segs)
	}
	d.depth = defaultDepth
	if p.Src != nil && p.observed() {
		d.depth = windowDepth(d.n)
	}
	if p.Depth > 0 {
		d.depth = p.Depth
	}
	if d.feeding {
		// The spans the dealer will read, for the files' digests.
		spans := map[string][][2]int64{}
		for i := range d.segs {
			if file, begin, end := d.span(i); file != "" && end-begin <= 2*segmentBytes {
				spans[file] = append(spans[file], [2]int64{begin, end})
			}
		}
		p.planFeeds(spans)
	}
	// The first segments' reads start now, before any worker is ready: a
	// worker takes a second or more to start (engine.wasm compiled, its
	// kernels checked, the adapter opened), which the bytes spend on their
	// way instead. They are the reads the dealer would start first (in file
	// order when that matters), as many as the workers will hold.
	for i := range min(len(d.segs), earlyReads(d.n, d.depth, p.observed())) {
		d.early[i] = p.startRead(d, i)
	}
	return d
}

// span is the file and byte span the dealer reads for segment i.
func (d *dealPlan) span(i int) (file string, begin, end int64) {
	file, begin, end = spanOf(d.segs[i])
	if b, ok := d.from[i]; ok {
		begin = b
	}
	return file, begin, end
}

// startRead starts reading segment i's span (a local file is read here
// too, so that the next segment's bytes are ready when the worker wants
// them); nil when the worker is to read them itself.
func (p *AuditPool) startRead(d *dealPlan, i int) chan spanRead {
	file, begin, end := d.span(i)
	if file == "" || end-begin > 2*segmentBytes {
		return nil
	}
	read := p.readSpan(d.ctx, file, begin, end)
	if read == nil {
		return nil
	}
	ch := make(chan spanRead, 1)
	feed := p.feed(file)
	go func() {
		if feed != nil {
			feed.gate(d.ctx, begin) // not too far ahead of the file's digest
		}
		buf, err := read()
		ch <- spanRead{buf, err}
	}()
	return ch
}

// read is segment i's read: the one started early, or a new one.
func (p *AuditPool) read(d *dealPlan, i int) chan spanRead {
	if ch, ok := d.early[i]; ok {
		delete(d.early, i)
		return ch
	}
	return p.startRead(d, i)
}

// Prefetch is the pool's audit.Options.Prefetch: told the pairs once the
// engine worker has their places (the checkpoint's header), it plans their
// deal and starts the first reads, and has workers started ahead open the
// adapter from its URL, while the engine worker reads the report. Remote
// then deals that plan.
func (p *AuditPool) Prefetch(ctx context.Context, jobs []audit.Job) {
	if len(jobs) == 0 {
		return
	}
	if p.pre != nil && !p.preOpened {
		// From a URL the workers wait for the engine worker to have found
		// the adapter there: it has (its header is read).
		open := p.openMsg()
		for _, w := range p.pre {
			w.Call("postMessage", open)
		}
		p.preOpened = true
	}
	p.ahead = p.plan(ctx, jobs)
}

// planFor is the plan for Remote's jobs: Prefetch's, when it made one.
func (p *AuditPool) planFor(ctx context.Context, jobs []audit.Job) (*dealPlan, error) {
	d := p.ahead
	p.ahead = nil
	if d == nil {
		return p.plan(ctx, jobs), nil
	}
	mods := make([]string, len(jobs))
	for i, j := range jobs {
		mods[i] = j.Module
	}
	if d.ctx != ctx || !slices.Equal(d.modules, mods) {
		// Never so from audit.Run (both lists are its todo). The feeds
		// wait for the planned spans: none will come.
		if d.feeding {
			p.abandonFeeds()
		}
		return nil, errors.New("the pool was asked for other pairs than it prefetched")
	}
	return d, nil
}
