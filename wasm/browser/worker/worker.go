//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"sync"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// Package worker is engine.wasm's side of the browser (web/worker): the
// engine worker that runs the pages' jobs, the audit's pool of workers,
// and the hand-assembled WebAssembly SIMD kernels they compute with.
//
// The audit workers. The page's Go (app.wasm) checks nothing itself: it
// starts Web Workers, each running engine.wasm (web/worker) through
// worker.js, opens the same adapter in every one (a File can be posted to
// a worker; a URL is read by range from each), and deals the pairs out one
// at a time, largest first, to whichever worker is free. Go's wasm has no
// threads: this is how the browser audit uses more than one core, and the
// page itself never stalls.
//
// Messages, page → worker:
//
//	{op: "open", dir, spec, url, token} or {op: "open", dir, spec, files: [File], names: [string]}
//	{op: "pairs", modules: [module]} (neighbours in the file, checked in order)
//
// worker → page:
//
//	{op: "ready", simd_error} once engine.wasm runs (simd_error says why the
//	SIMD kernel is not in use, if it is not); {op: "opened", kernel};
//	{op: "figures", module, json};
//	{op: "error", msg} (the page then stops every worker).

// AuditSpec is what a worker needs besides the files: the audit's mode and
// claims, as JSON.
type AuditSpec struct {
	Mode   report.Mode     `json:"mode"`
	Probes int             `json:"probes,omitempty"`
	Claims json.RawMessage `json:"claims,omitempty"`
}

// SpecOf describes opt for the workers.
func SpecOf(opt audit.Options) (string, error) {
	s := AuditSpec{Mode: opt.Mode, Probes: opt.Probes}
	if opt.Claims != nil {
		b, err := json.Marshal(opt.Claims)
		if err != nil {
			return "", err
		}
		s.Claims = b
	}
	b, err := json.Marshal(s)
	return string(b), err
}

func (s *AuditSpec) options() (audit.Options, error) {
	opt := audit.Options{Mode: s.Mode, Probes: s.Probes, Workers: 1}
	if len(s.Claims) > 0 {
		p, err := claims.Parse(s.Claims)
		if err != nil {
			return opt, err
		}
		opt.Claims = p
	}
	return opt, nil
}

// Serve runs in a worker (engine.wasm's main): it answers the
// messages until the worker is terminated — the page's jobs (engine.go)
// and, in a pool's worker, the audit's pairs.
func Serve() {
	browser.Install()
	self := js.Global()
	msgs := make(chan js.Value, 64)
	handler := js.FuncOf(func(this js.Value, args []js.Value) any {
		msgs <- args[0].Get("data")
		return nil
	})
	self.Set("onmessage", handler)
	// Messages that came before Go was running were queued by worker.js.
	if q := self.Get("clefcheckQueue"); q.Truthy() {
		for i := 0; i < q.Length(); i++ {
			msgs <- q.Index(i).Get("data")
		}
		self.Delete("clefcheckQueue")
	}
	post := func(kv ...any) {
		o := js.Global().Get("Object").New()
		for i := 0; i+1 < len(kv); i += 2 {
			o.Set(kv[i].(string), kv[i+1])
		}
		self.Call("postMessage", o)
	}
	simdErr := ""
	if err := InstallSIMD(); err != nil {
		simdErr = err.Error()
	}
	post("op", "ready", "simd_error", simdErr)
	var sess *audit.Session
	var preload func(name string, off int64, data []byte) // the session's source's
	var spanBuf []byte                                    // the memory of the current span, reused
	spanFile := ""
	runner := &jobRunner{cancels: map[int]context.CancelFunc{}, post: post}
	for m := range msgs {
		switch m.Get("op").String() {
		case "job":
			runner.start(m)
		case "cancel":
			runner.cancel(m.Get("id").Int())
		case "open":
			s, pre, err := openSession(m)
			if err != nil {
				post("op", "error", "msg", err.Error())
				continue
			}
			if sess != nil {
				sess.Close()
			}
			sess, preload = s, pre
			post("op", "opened", "kernel", s.Kernel())
		case "pairs":
			if sess == nil {
				post("op", "error", "msg", "pairs before open")
				continue
			}
			if buf := m.Get("buf"); buf.Truthy() && preload != nil {
				// The engine worker read this segment's span while we
				// computed. The previous span is done with (segments are
				// checked one after the other): drop it and reuse its memory.
				if spanFile != "" {
					preload(spanFile, 0, nil)
				}
				n := buf.Get("byteLength").Int()
				if cap(spanBuf) < n {
					spanBuf = make([]byte, n)
				}
				data := spanBuf[:n]
				js.CopyBytesToGo(data, js.Global().Get("Uint8Array").New(buf))
				spanFile = m.Get("file").String()
				preload(spanFile, int64(m.Get("offset").Float()), data)
			}
			mods := m.Get("modules")
			for i := 0; i < mods.Length(); i++ {
				mod := mods.Index(i).String()
				f, err := sess.Check(mod)
				if err != nil {
					post("op", "error", "msg", err.Error())
					break
				}
				b, err := json.Marshal(f)
				if err != nil {
					post("op", "error", "msg", fmt.Sprintf("%s: %v", mod, err))
					break
				}
				post("op", "figures", "module", mod, "json", string(b))
			}
		}
	}
}

// openSession opens the pool worker's audit session, with the preloading
// of its source (where the engine worker's read-ahead spans go).
func openSession(m js.Value) (*audit.Session, func(string, int64, []byte), error) {
	var spec AuditSpec
	if err := json.Unmarshal([]byte(m.Get("spec").String()), &spec); err != nil {
		return nil, nil, fmt.Errorf("audit spec: %v", err)
	}
	opt, err := spec.options()
	if err != nil {
		return nil, nil, err
	}
	var fsys fs.FS
	var pre func(string, int64, []byte)
	switch {
	case m.Get("url").Truthy():
		h, err := source.NewHTTP(m.Get("url").String())
		if err != nil {
			return nil, nil, err
		}
		h.ReadAhead = readAhead
		if t := m.Get("token"); t.Truthy() {
			h.Token = t.String()
		}
		fsys, pre = h, h.Preload
	case m.Get("files").Truthy():
		files, names := m.Get("files"), m.Get("names")
		if files.Length() != names.Length() {
			return nil, nil, errors.New("files and names differ in number")
		}
		f := browser.NewFiles()
		for i := 0; i < files.Length(); i++ {
			f.Add(files.Index(i), names.Index(i).String())
		}
		fsys, pre = f, f.Preload
	default:
		return nil, nil, errors.New("open: neither a URL nor files")
	}
	sess, err := audit.Open(fsys, m.Get("dir").String(), opt)
	return sess, pre, err
}

// AuditPool is the page's side: Remote is an audit.Options.Remote that
// runs the pairs in N workers started from WorkerURL.
type AuditPool struct {
	N         int
	WorkerURL string
	Dir       string
	Spec      string
	// The adapter: a base URL (with an optional token), or local files.
	URL, Token string
	Files      *browser.Files
	// Depth is how many segments each worker holds at a time (default 2:
	// one computing, one downloading).
	Depth int
	// OnStart, when set, is told how many workers started, and the
	// kernels they compute with (audit.Summary.Kernel; "" in quick mode).
	OnStart func(n int, kernel string)
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

// segmentBytes is about how much of the file one deal covers; readAhead
// is the HTTP read-ahead window of a worker, for the spans the page could
// not fetch for it.
const (
	segmentBytes = 32 << 20
	readAhead    = 32 << 20
)

// quickDepth is the segments per worker in a quick audit.
var quickDepth = 4

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

type workerMsg struct {
	w int
	v js.Value
}

// Remote checks the jobs in the workers.
func (p *AuditPool) Remote(ctx context.Context, jobs []audit.Job, add func(int64)) ([]audit.Figures, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	n := min(max(1, p.N), max(1, len(jobs)))
	msgs := make(chan workerMsg, 4*n)
	workers := make([]js.Value, n)
	var funcs []js.Func
	defer func() {
		for _, w := range workers {
			if w.Truthy() {
				w.Call("terminate")
			}
		}
		for _, f := range funcs {
			f.Release()
		}
	}()
	for i := range workers {
		i := i
		w := js.Global().Get("Worker").New(p.WorkerURL)
		onMsg := js.FuncOf(func(this js.Value, args []js.Value) any {
			msgs <- workerMsg{i, args[0].Get("data")}
			return nil
		})
		onErr := js.FuncOf(func(this js.Value, args []js.Value) any {
			msg := "the audit worker failed to start"
			if m := args[0].Get("message"); m.Truthy() {
				msg += ": " + m.String()
			}
			o := js.Global().Get("Object").New()
			o.Set("op", "error")
			o.Set("msg", msg+" ("+p.WorkerURL+")")
			msgs <- workerMsg{i, o}
			return nil
		})
		funcs = append(funcs, onMsg, onErr)
		w.Set("onmessage", onMsg)
		w.Set("onerror", onErr)
		workers[i] = w
	}
	open := js.Global().Get("Object").New()
	open.Set("op", "open")
	open.Set("dir", p.Dir)
	open.Set("spec", p.Spec)
	if p.Files != nil {
		files, names := js.Global().Get("Array").New(), js.Global().Get("Array").New()
		for _, name := range p.Files.Names() {
			files.Call("push", p.Files.Value(name))
			names.Call("push", name)
		}
		open.Set("files", files)
		open.Set("names", names)
	} else {
		open.Set("url", p.URL)
		if p.Token != "" {
			open.Set("token", p.Token)
		}
	}
	// Deal neighbouring pairs together, in file order, in segments of about
	// segmentBytes, biggest first, each worker holding up to `depth` of
	// them. The engine worker reads each segment's span itself (a range
	// request for a URL, a slice of a local File) and transfers the bytes
	// with the segment: the next one arrives while the worker computes (a
	// worker busy in wasm does not drain its own reads). If that read
	// fails the worker reads the bytes itself.
	segs := audit.Segments(jobs, segmentBytes)
	depth := 2
	if p.Depth > 0 {
		depth = p.Depth
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
	send := func(w, i int) {
		mods := js.Global().Get("Array").New()
		for _, j := range segs[i] {
			mods.Call("push", j.Module)
			busy[w] = append(busy[w], j.Module)
		}
		o := js.Global().Get("Object").New()
		o.Set("op", "pairs")
		o.Set("modules", mods)
		file, begin, end := spanOf(segs[i])
		if file == "" || end-begin > 2*segmentBytes {
			workers[w].Call("postMessage", o)
			return
		}
		var promise js.Value
		if p.Files != nil {
			// A local file: read the span here too, so that the next
			// segment's bytes are ready when the worker wants them.
			f := p.Files.Value(file)
			if !f.Truthy() {
				workers[w].Call("postMessage", o)
				return
			}
			promise = f.Call("slice", float64(begin), float64(end)).Call("arrayBuffer")
		} else {
			fetchRange := js.Global().Get("clefcheckFetchRange")
			u, err := url.JoinPath(p.URL, file)
			if err != nil || fetchRange.Type() != js.TypeFunction {
				workers[w].Call("postMessage", o)
				return
			}
			promise = fetchRange.Invoke(u, float64(begin), float64(end-1), p.Token)
		}
		go func() {
			if buf, err := browser.Await(promise); err == nil {
				o.Set("buf", buf)
				o.Set("file", file) // the path the worker opened it by (Reader.Name)
				o.Set("offset", float64(begin))
				workers[w].Call("postMessage", o, []any{buf})
				return
			}
			workers[w].Call("postMessage", o)
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
	for len(out) < len(jobs) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m := <-msgs:
			switch m.v.Get("op").String() {
			case "ready":
				if e := m.v.Get("simd_error"); e.Truthy() && simdErr == "" {
					simdErr = e.String()
				}
				workers[m.w].Call("postMessage", open)
			case "opened":
				started++
				if p.OnStart != nil {
					k := m.v.Get("kernel").String()
					if simdErr != "" {
						k += " (no SIMD: " + simdErr + ")"
					}
					p.OnStart(started, k)
				}
				give(m.w)
			case "figures":
				var f audit.Figures
				if err := json.Unmarshal([]byte(m.v.Get("json").String()), &f); err != nil {
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
			case "error":
				return nil, fmt.Errorf("audit worker %d: %s", m.w+1, m.v.Get("msg").String())
			}
		}
	}
	return out, nil
}

// jobRunner runs the page's jobs in the engine worker.
type jobRunner struct {
	mu      sync.Mutex
	cancels map[int]context.CancelFunc
	post    func(kv ...any)
}

func (r *jobRunner) start(m js.Value) {
	id := m.Get("id").Int()
	var spec jobs.Spec
	if err := json.Unmarshal([]byte(m.Get("spec").String()), &spec); err != nil {
		r.post("op", "fail", "id", id, "msg", "job spec: "+err.Error())
		return
	}
	files := m.Get("files")
	ctx, cancel := context.WithCancel(context.Background())
	r.mu.Lock()
	r.cancels[id] = cancel
	r.mu.Unlock()
	go func() {
		defer func() {
			r.mu.Lock()
			delete(r.cancels, id)
			r.mu.Unlock()
			cancel()
		}()
		y := &browser.Yielder{}
		host := runner.Host{
			Open:        func(in *jobs.Input) (fs.FS, error) { return openInput(in, files) },
			AuditRemote: poolFor,
			Yield:       y.Yield,
		}
		out, err := runner.Run(ctx, &spec, host, func(e jobs.Event) {
			b, err := json.Marshal(e)
			if err == nil {
				r.post("op", "event", "id", id, "json", string(b))
			}
		})
		if err == nil {
			var b []byte
			if b, err = json.Marshal(out); err == nil {
				r.post("op", "done", "id", id, "json", string(b))
				return
			}
		}
		r.post("op", "fail", "id", id, "msg", err.Error())
	}()
}

func (r *jobRunner) cancel(id int) {
	r.mu.Lock()
	c := r.cancels[id]
	r.mu.Unlock()
	if c != nil {
		c()
	}
}

// openInput gives a job's input as files: a URL read by range, or the
// files the page attached under in.Files.
func openInput(in *jobs.Input, files js.Value) (fs.FS, error) {
	switch {
	case in.URL != "":
		h, err := source.NewHTTP(in.URL)
		if err != nil {
			return nil, err
		}
		h.Token = in.Token
		return h, nil
	case in.Files != "":
		if !files.Truthy() {
			return nil, errors.New("no files were attached")
		}
		list := files.Get(in.Files)
		if !list.Truthy() || list.Get("length").Int() == 0 {
			return nil, fmt.Errorf("no files chosen (%s)", in.Files)
		}
		if list.Get("item").Type() != js.TypeFunction { // an array of File
			f := browser.NewFiles()
			for i := 0; i < list.Length(); i++ {
				f.Add(list.Index(i), list.Index(i).Get("name").String())
			}
			return f, nil
		}
		return browser.FromFileList(list), nil
	}
	return nil, errors.New("neither a URL nor files")
}

// poolFor checks an audit's pairs in a pool of nested workers when this
// worker can start them.
func poolFor(fsys fs.FS, in *jobs.Input, opt audit.Options, onStart func(int, string)) func(context.Context, []audit.Job, func(int64)) ([]audit.Figures, error) {
	if !browser.CanUseWorkers() {
		return nil
	}
	spec, err := SpecOf(opt)
	if err != nil {
		return nil
	}
	self := js.Global().Get("location").Get("href").String()
	pool := &AuditPool{N: Workers(), Dir: ".", Spec: spec, OnStart: onStart, WorkerURL: self}
	if opt.Mode == report.ModeQuick {
		// The quick scan computes at memory speed: keep more downloads in
		// flight instead.
		pool.Depth = quickDepth
	}
	switch f := fsys.(type) {
	case *source.HTTP:
		pool.URL, pool.Token = f.Base.String(), f.Token
	case *browser.Files:
		pool.Files = f
	default:
		return nil
	}
	return pool.Remote
}
