//go:build js && wasm

package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/browser/msg"
	"github.com/kvit-s/clefcheck/wasm/fetch"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// AuditPool is the dealer, the engine worker's side of an audit's pool:
// Remote is an audit.Options.Remote that runs the pairs in N workers
// started from WorkerURL.
type AuditPool struct {
	N         int
	WorkerURL string
	Dir       string
	Spec      string
	// The adapter: a base URL (with an optional token), or local files.
	URL, Token string
	Files      *browser.Files
	// Src, with URL, is the engine worker's source of the same files: the
	// dealer reads the segments' spans through it (its retries, its
	// redirects, its token rule).
	Src *source.HTTP
	// Depth is how many segments each worker holds at a time (default
	// defaultDepth: one computing, the others downloading).
	Depth int
	// OnStart, when set, is told how many workers started, the kernels
	// they compute with (audit.Summary.Kernel; "" in quick mode), and how
	// they were started: "started before the audit" when they were warm
	// (warm.go), else "".
	OnStart func(n int, kernel, how string)

	retries atomic.Int64 // the pool workers' retried reads (msg.Figures)
	memMu   sync.Mutex
	mem     []int64 // each pool worker's WebAssembly memory, its largest report
	bufMu   sync.Mutex
	bufs    [][]byte   // span buffers free for reuse
	spent   []js.Value // ArrayBuffers the pool workers handed back
	pieces  []js.Value // the same, of msg.PieceBytes (pieceBuffers)
	feedMu  sync.Mutex
	feeds   map[string]*fileFeed // picked files hashed from the spans (feed.go)
	planned bool                 // the feeds were told the spans

	// Started ahead (Start): the workers, their messages, and whether
	// msg.Open went to them with their start.
	pre       []js.Value
	preMsgs   chan workerMsg
	preStop   func()
	preOpened bool
	warm      bool // the workers were started before the audit (warm.go)
}

// buffer is a span buffer of n bytes, reused when one is free.
func (p *AuditPool) buffer(n int64) []byte {
	p.bufMu.Lock()
	defer p.bufMu.Unlock()
	for i, b := range p.bufs {
		if int64(cap(b)) >= n {
			p.bufs = append(p.bufs[:i], p.bufs[i+1:]...)
			return b[:n]
		}
	}
	// Capacities in steps of 16 MiB, so that spans of neighbouring sizes
	// reuse each other's buffers (fewer of them live at once).
	return make([]byte, n, (n+16<<20-1)&^(16<<20-1))
}

// release gives a span buffer back (a few are kept: as many as there may
// be spans in flight, so that none is allocated again — and left to the
// collector — per span).
func (p *AuditPool) release(b []byte) {
	p.bufMu.Lock()
	defer p.bufMu.Unlock()
	if len(p.bufs) < 8 {
		p.bufs = append(p.bufs, b)
	}
}

// Retries is how many range reads the pool workers retried (the dealer's
// own, for the spans, are Src's).
func (p *AuditPool) Retries() int64 { return p.retries.Load() }

// Memory is each pool worker's WebAssembly memory in bytes, as it last
// reported it (memory only grows: the peak).
func (p *AuditPool) Memory() []int64 {
	p.memMu.Lock()
	defer p.memMu.Unlock()
	return slices.Clone(p.mem)
}

// Workers is how many audit workers suit this browser: one per core the
// browser reports (at least two, so that one computes while the other
// waits for its bytes; at most eight). More than the cores starves the
// page's own thread: frames then come late.
func Workers() int {
	n := js.Global().Get("navigator").Get("hardwareConcurrency")
	if n.Type() != js.TypeNumber {
		return 2
	}
	return min(8, max(2, n.Int()))
}

// spanOf is the file and byte span covering a segment's pairs ("" when
// they are not all in one file).
func spanOf(seg []audit.Job) (file string, begin, end int64) {
	for i, j := range seg {
		if j.File == "" || (i > 0 && j.File != file) {
			return "", 0, 0
		}
		if i == 0 {
			file, begin, end = j.File, j.Begin, j.End
		}
		begin, end = min(begin, j.Begin), max(end, j.End)
	}
	return file, begin, end
}

// spanRead is a span's bytes read for a pool worker, or why not.
type spanRead struct {
	buf js.Value
	err error
}

// readSpan starts reading bytes [begin, end) of file, for a pool worker:
// a slice of the local File, or Range requests through Src (made by
// clefcheckFetchRange in public/clefcheck.js, retried as Src's policy
// says); read waits for the ArrayBuffer. It is nil when it cannot.
func (p *AuditPool) readSpan(ctx context.Context, file string, begin, end int64) (read func() (js.Value, error)) {
	if p.Files != nil && p.Files.Observed() {
		// Past the observers (the file's digest): into Go, then out.
		return p.viaGo(func(buf []byte) error { return p.Files.ReadRange(ctx, file, begin, buf) }, end-begin)
	}
	if p.Files != nil {
		f := p.Files.Value(file)
		if !f.Truthy() {
			return nil
		}
		// Into buffers a pool worker handed back (a BYOB read:
		// clefcheckReadBlob), read as soon as asked (startRead) so that
		// they are ready when wanted: pieces (msg.Piece: why) unless a
		// file's feed takes the span whole.
		n := int(end - begin)
		whole := p.feed(file) != nil
		return func() (js.Value, error) {
			into := p.spanBuffer(n)
			if !whole {
				into = p.pieceBuffers(n)
			}
			r, err := browser.Await(js.Global().Call("clefcheckReadBlob", f, float64(begin), float64(end), into))
			if err != nil {
				return js.Undefined(), browser.BlobError(err, file)
			}
			if got := r.Get("n").Int(); got != n {
				return js.Undefined(), browser.ShortRead(file, got, n, begin)
			}
			if bufs := r.Get("bufs"); bufs.Truthy() {
				return bufs, nil
			}
			return r.Get("buf"), nil
		}
	}
	if p.Src != nil && (p.Src.Keeps(file) || (p.Src.Observed() && p.feed(file) == nil)) {
		// Through the source's cache, and past its observers (the file's
		// digest, unless its feed takes the spans): the bytes come into
		// Go, then go out to the worker.
		return p.viaGo(func(buf []byte) error { return p.Src.ReadRange(ctx, file, begin, buf) }, end-begin)
	}
	if p.Src == nil || js.Global().Get("clefcheckFetchRange").Type() != js.TypeFunction {
		return nil
	}
	return func() (js.Value, error) {
		if p.feed(file) != nil {
			return p.fetchRange(ctx, file, begin, end, js.Undefined()) // the feed takes it whole
		}
		// In pieces (msg.Piece), as from picked files: a 32 MiB body in
		// one message starts a full collection in the worker it reaches.
		return p.fetchRange(ctx, file, begin, end, p.pieceBuffers(int(end-begin)))
	}
}

// fetchRange reads bytes [begin, end) of file from the URL into an
// ArrayBuffer (clefcheckFetchRange, a BYOB read, retried as Src's policy
// says) and resolves to it: the first try reads into into when it is big
// enough, each other try into a buffer a pool worker handed back (a try
// that fails may leave its buffer transferred). When into is an Array of
// pieces (pieceBuffers), every try reads into pieces and the span comes
// back as an Array of them.
func (p *AuditPool) fetchRange(ctx context.Context, file string, begin, end int64, into js.Value) (js.Value, error) {
	fetchRange := js.Global().Get("clefcheckFetchRange")
	buf := js.Undefined()
	pieces := into.InstanceOf(js.Global().Get("Array"))
	err := p.Src.ReadWith(ctx, file, begin, end-begin, func(ctx context.Context, u string, hdr map[string]string) (*fetch.Response, int64, error) {
		if buf.Truthy() {
			p.keepSpent(buf) // a try's body that was not accepted
		}
		buf = js.Undefined()
		ac := js.Global().Get("AbortController").New()
		stop := context.AfterFunc(ctx, func() { ac.Call("abort") })
		defer stop()
		token := strings.TrimPrefix(hdr["Authorization"], "Bearer ")
		within := p.Src.AnswerWithin()
		try := into
		if room(try) < int(end-begin) {
			if pieces {
				try = p.pieceBuffers(int(end - begin))
			} else {
				try = p.spanBuffer(int(end - begin))
			}
		}
		into = js.Undefined()
		v, err := browser.Await(fetchRange.Invoke(u, float64(begin), float64(end-1), token, ac.Get("signal"), float64(within.Milliseconds()), try))
		if err != nil || !v.Get("bufs").Truthy() {
			// What was not taken (an answer other than 206, a body cut
			// short): transferred buffers are 0 bytes long, and keepSpent
			// passes them by. Pieces that came back (bufs) are all the
			// answer's, even those the body did not reach.
			p.keepSpent(try)
		}
		switch {
		case ctx.Err() != nil:
			return nil, 0, ctx.Err()
		case browser.NoAnswer(err, within) != nil:
			return nil, 0, browser.NoAnswer(err, within)
		case err != nil && strings.Contains(err.Error(), "TypeError"):
			return nil, 0, fmt.Errorf("%w: %v", fetch.ErrFetchFailed, err)
		case err != nil:
			return nil, 0, err
		}
		resp := &fetch.Response{Status: v.Get("status").Int(), Header: map[string]string{}, URL: v.Get("url").String()}
		h := v.Get("headers")
		keys := js.Global().Get("Object").Call("keys", h)
		for i := 0; i < keys.Length(); i++ {
			k := keys.Index(i).String()
			resp.Header[k] = h.Get(k).String()
		}
		var n int64
		if b := v.Get("bufs"); b.Truthy() {
			buf, n = b, int64(v.Get("n").Int())
		} else if b := v.Get("buf"); b.Truthy() {
			buf, n = b, int64(v.Get("n").Int())
		}
		return resp, n, nil
	})
	return buf, err
}

// viaGo is a span read into a Go buffer of n bytes by read, then copied
// into pieces (pieceBuffers) to transfer.
func (p *AuditPool) viaGo(read func([]byte) error, n int64) func() (js.Value, error) {
	return func() (js.Value, error) {
		buf := p.buffer(n)
		defer p.release(buf)
		if err := read(buf); err != nil {
			return js.Undefined(), err
		}
		// In pieces (msg.Piece: why).
		bufs := p.pieceBuffers(len(buf))
		for k := range bufs.Length() {
			at := k * msg.PieceBytes
			piece := buf[at:min(len(buf), at+msg.PieceBytes)]
			js.CopyBytesToJS(js.Global().Get("Uint8Array").New(bufs.Index(k), 0, len(piece)), piece)
		}
		return bufs, nil
	}
}

// observed tells whether the engine worker's source is observed (the
// audit's digests take the spans' bytes as they pass).
func (p *AuditPool) observed() bool {
	return (p.Src != nil && p.Src.Observed()) || (p.Files != nil && p.Files.Observed())
}

// maxTile is the widest gap between two segments' spans that the later
// one's read covers too.
const maxTile = 8 << 20

// fileOrder deals the segments in file order, each span's read starting
// where the previous one in its file ended (when the gap between them is
// small): the spans then pass in order, and tile the file, for its digest.
// It returns where each segment's read starts.
func fileOrder(segs [][]audit.Job) map[int]int64 {
	slices.SortStableFunc(segs, func(a, b []audit.Job) int {
		if c := strings.Compare(a[0].File, b[0].File); c != 0 {
			return c
		}
		return cmp.Compare(a[0].Begin, b[0].Begin)
	})
	from := map[int]int64{}
	prev := map[string]int64{}
	for i, seg := range segs {
		file, begin, end := spanOf(seg)
		if file == "" {
			continue
		}
		if pe, ok := prev[file]; ok && pe < begin && begin-pe <= maxTile {
			from[i] = pe
		}
		prev[file] = max(prev[file], end)
	}
	return from
}

// Remote checks the jobs in the workers.
func (p *AuditPool) Remote(ctx context.Context, jobs []audit.Job, add func(int64)) ([]audit.Figures, error) {
	if len(jobs) == 0 {
		p.abandonFeeds() // no span will come: the files are hashed whole
		return nil, nil
	}
	n := min(max(1, p.N), max(1, len(jobs)))
	// A file hashed from the spans (feed.go) has its digest worker's one
	// SHA-256 stream as the audit's longest pass: it is left a core, the
	// pool having one worker fewer. On the 2-core bench machine (4 rounds
	// each, medians) one pool worker instead of two took randomized from a
	// URL from 8.37 s to 7.90 s, exact from 9.73 s to 9.22 s, and quick
	// from picked files from 6.86 s to 6.21 s; where the spans pass through
	// the engine worker instead (a URL the cache keeps) it was 5-10% slower,
	// so there the pool keeps them all.
	feeding := p.hasFeeds()
	spare := 0
	if feeding && n > 1 {
		spare = 1
	}
	var msgs chan workerMsg
	var workers []js.Value
	opening := p.preOpened // msg.Open went with their start
	if p.pre != nil {
		// Started ahead (Start), picked files opened or opening: all of
		// them work (a worker with no segment to take stays idle), but
		// for the spare one, stopped now.
		msgs, workers, n = p.preMsgs, p.pre, len(p.pre)
		defer p.Close()
		p.preOpened = false
		if spare > 0 && n > 1 {
			n--
			workers[n].Call("terminate")
			workers = workers[:n]
		}
	} else {
		n -= spare
		var stop func()
		workers, msgs, stop = p.launch(n)
		defer stop()
	}
	open := p.openMsg()
	// Deal neighbouring pairs together, in file order, in segments of about
	// segmentBytes, biggest first, each worker holding up to `depth` of
	// them. The dealer reads each segment's span itself (a range request
	// for a URL, a slice of a local File) and transfers the bytes with the
	// segment: the next one arrives while the worker computes (a worker
	// busy in wasm does not drain its own reads). If that read fails the
	// worker reads the bytes itself.
	segs := audit.Segments(jobs, segmentBytes)
	var from map[int]int64
	if p.observed() || feeding {
		from = fileOrder(segs)
	}
	if feeding {
		defer p.abandonFeeds()
	}
	depth := dealDepth(n, p.Src != nil, p.Files != nil, p.observed(), feeding, p.Depth)
	if !feeding && !p.observed() { // nothing waits for the spans in file order
		segs = leadSegments(segs, n)
	}
	busy := make([][]string, n) // the pairs each worker holds
	outstanding := make([]int, n)
	segOf := map[string]int{}
	left := make([]int, len(segs))
	for i, seg := range segs {
		left[i] = len(seg)
		for _, j := range seg {
			segOf[j.Module] = i
		}
	}
	next := 0
	out := make([]audit.Figures, 0, len(jobs))
	bytes := map[string]int64{}
	for _, j := range jobs {
		bytes[j.Module] = j.Bytes
	}
	span := func(i int) (file string, begin, end int64) {
		file, begin, end = spanOf(segs[i])
		if b, ok := from[i]; ok {
			begin = b
		}
		return file, begin, end
	}
	// startRead starts reading segment i's span (a local file is read here
	// too, so that the next segment's bytes are ready when the worker wants
	// them); nil when the worker is to read them itself.
	startRead := func(i int) chan spanRead {
		file, begin, end := span(i)
		if file == "" || end-begin > 2*segmentBytes {
			return nil
		}
		read := p.readSpan(ctx, file, begin, end)
		if read == nil {
			return nil
		}
		ch := make(chan spanRead, 1)
		feed := p.feed(file)
		go func() {
			if feed != nil {
				feed.gate(ctx, begin) // not too far ahead of the file's digest
			}
			buf, err := read()
			ch <- spanRead{buf, err}
		}()
		return ch
	}
	// The first segments' reads start now, before any worker is ready: a
	// worker takes a second or more to start (engine.wasm compiled, its
	// kernels checked, the adapter opened), which the bytes spend on their
	// way instead. They are the reads the dealer would start first (in file
	// order when that matters), as many as the workers will hold.
	if feeding {
		// The spans the dealer will read, for the files' digests.
		spans := map[string][][2]int64{}
		for i := range segs {
			if file, begin, end := span(i); file != "" && end-begin <= 2*segmentBytes {
				spans[file] = append(spans[file], [2]int64{begin, end})
			}
		}
		p.planFeeds(spans)
	}
	early := map[int]chan spanRead{}
	for i := range min(len(segs), earlyReads(n, depth, p.observed())) {
		early[i] = startRead(i)
	}
	send := func(w, i int) {
		m := msg.Pairs{}
		refs := false
		for _, j := range segs[i] {
			m.Modules = append(m.Modules, j.Module)
			m.Refs = append(m.Refs, j.Ref)
			refs = refs || len(j.Ref) > 0
			busy[w] = append(busy[w], j.Module)
		}
		if !refs {
			m.Refs = nil
		}
		ch, ok := early[i]
		if ok {
			delete(early, i)
		} else {
			ch = startRead(i)
		}
		file, begin, end := span(i)
		if ch == nil {
			p.skipFeed(file, begin, end)
			workers[w].Call("postMessage", m.Value())
			return
		}
		go func() {
			r := <-ch
			if r.err == nil && r.buf.Truthy() && r.buf.InstanceOf(js.Global().Get("Array")) {
				// The span in pieces, then the pairs (one goroutine
				// posting them all: nothing comes between).
				m.Len, m.File, m.Offset, m.Pieces = end-begin, file, begin, r.buf.Length()
				for k := range m.Pieces {
					at := int64(k) * msg.PieceBytes
					piece := msg.Piece{Buf: r.buf.Index(k), File: file, Offset: begin, At: at, Len: min(msg.PieceBytes, end-begin-at), Total: end - begin}
					workers[w].Call("postMessage", piece.Value(), []any{piece.Buf})
				}
				workers[w].Call("postMessage", m.Value())
				return
			}
			if r.err == nil && r.buf.Truthy() {
				// file is the path the worker opened it by (Reader.Name)
				m.Buf, m.Len, m.File, m.Offset = r.buf, end-begin, file, begin
				workers[w].Call("postMessage", m.Value(), []any{r.buf})
				return
			}
			p.skipFeed(file, begin, end) // the worker reads it itself
			workers[w].Call("postMessage", m.Value())
		}()
	}
	give := func(w int) {
		for outstanding[w] < depth && next < len(segs) {
			send(w, next)
			outstanding[w]++
			next++
		}
	}
	started, simdErr := 0, ""
	retries := make([]int, n) // each worker's, as it last said
	for len(out) < len(jobs) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m := <-msgs:
			if m.w >= n {
				continue // the spare worker's, posted before it was stopped
			}
			switch msg.OpOf(m.v) {
			case msg.OpReady:
				if e := msg.ReadyOf(m.v).SIMDError; e != "" && simdErr == "" {
					simdErr = e
				}
				if !opening {
					workers[m.w].Call("postMessage", open)
				}
			case msg.OpSpent:
				s := msg.SpentOf(m.v)
				if f := p.feed(s.File); f == nil || s.Len <= 0 || !f.offer(s.Offset, s.Offset+s.Len, s.Buf) {
					p.keepSpent(s.Buf)
				}
			case msg.OpOpened:
				started++
				if p.OnStart != nil {
					k := msg.OpenedOf(m.v).Kernel
					if simdErr != "" {
						k += " (no SIMD: " + simdErr + ")"
					}
					how := ""
					if p.warm {
						how = "started before the audit"
					}
					p.OnStart(started, k, how)
				}
				give(m.w)
			case msg.OpFigures:
				var f audit.Figures
				fm := msg.FiguresOf(m.v)
				if fm.Retries > retries[m.w] {
					p.retries.Add(int64(fm.Retries - retries[m.w]))
					retries[m.w] = fm.Retries
				}
				p.memMu.Lock()
				if len(p.mem) < n {
					p.mem = append(p.mem, make([]int64, n-len(p.mem))...)
				}
				p.mem[m.w] = max(p.mem[m.w], fm.Mem)
				p.memMu.Unlock()
				if err := json.Unmarshal([]byte(fm.JSON), &f); err != nil {
					return nil, fmt.Errorf("worker %d: %v", m.w, err)
				}
				if !slices.Contains(busy[m.w], f.Module) {
					return nil, fmt.Errorf("worker %d answered for %s, which it was not given", m.w+1, f.Module)
				}
				busy[m.w] = slices.DeleteFunc(busy[m.w], func(s string) bool { return s == f.Module })
				add(bytes[f.Module])
				out = append(out, f)
				if left[segOf[f.Module]]--; left[segOf[f.Module]] == 0 {
					outstanding[m.w]--
					give(m.w)
				}
			case msg.OpError:
				e := msg.ErrorOf(m.v)
				return nil, errorOf(fmt.Sprintf("audit worker %d: %s", m.w+1, e.Msg), e.Class)
			}
		}
	}
	return out, nil
}
