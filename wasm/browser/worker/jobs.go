//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/browser/msg"
	"github.com/kvit-s/clefcheck/wasm/hub"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// jobRunner runs the page's jobs in the engine worker, each in its own
// goroutine: msg.Job starts one, msg.Cancel cancels it; it answers with
// msg.Event, then msg.Done or msg.Fail.
type jobRunner struct {
	mu      sync.Mutex
	cancels map[int]context.CancelFunc
	post    func(js.Value)
}

func (r *jobRunner) start(m msg.Job) {
	id := m.ID
	var spec jobs.Spec
	if err := json.Unmarshal([]byte(m.Spec), &spec); err != nil {
		r.post(msg.Fail{ID: id, Msg: "job spec: " + err.Error()}.Value())
		return
	}
	files := m.Files
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
		// A panic in a job would stop engine.wasm, and every job with it
		// (worker.js then says so): this one fails instead, with the
		// panic's value, its stack on the console.
		defer func() {
			if v := recover(); v != nil {
				js.Global().Get("console").Call("error", fmt.Sprintf("clefcheck: job %d (%s) panicked: %v\n%s", id, spec.Kind, v, debug.Stack()))
				r.post(msg.Fail{ID: id, Msg: fmt.Sprintf("internal error in clefcheck's engine (%s): %v — please report it", spec.Kind, v)}.Value())
			}
		}()
		if spec.Kind == jobs.KindAudit && !spec.NoDigest {
			// The digest worker is starting (serve.go): its check takes a
			// moment after the page loads; wait for it, a little. Picked
			// files wait for its file check too (they are hashed there).
			ready := digestReady
			if spec.Adapter != nil && spec.Adapter.URL == "" {
				ready = filesReady
			}
			select {
			case <-ready:
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
		}
		y := &browser.Yielder{}
		var reads retryCount
		var pools []*AuditPool
		// This job's picked files the digest worker hashed, and how many
		// of them its file reader read (another job may run meanwhile).
		var wholeHashed, readByReader atomic.Int64
		host := runner.Host{
			Open: func(in *jobs.Input) (fs.FS, error) {
				fsys, err := openInput(in, files)
				withCache(fsys)
				if h, ok := fsys.(*source.HTTP); ok {
					reads.add(h)
				}
				return fsys, err
			},
			AuditRemote: func(fsys fs.FS, in *jobs.Input, opt audit.Options, onStart func(int, string, string)) func(context.Context, []audit.Job, func(int64)) ([]audit.Figures, error) {
				pool := poolFor(fsys, opt, onStart)
				if pool == nil {
					return nil
				}
				reads.add(pool)
				pools = append(pools, pool)
				pool.Start() // beside the engine worker's inventory
				return pool.Remote
			},
			Yield:        y.Yield,
			DigestWindow: windowFor(&spec),
			HashFile: func(fsys fs.FS, name string, size int64) (func(context.Context) ([]byte, float64, error), bool) {
				if src := httpOf(fsys); src != nil {
					// A URL's tensors, hashed by the digest worker from the
					// spans the pool's dealer fetches (feed.go).
					d := digests.Load()
					if d == nil || runner.SHA256.Name() != digestWorkerKernel || !strings.HasSuffix(name, ".safetensors") {
						return nil, false
					}
					for _, pl := range pools {
						if pl.Src == src {
							if fd := pl.urlFeed(ctx, d, name, size); fd != nil {
								return fd.wait, true
							}
						}
					}
					return nil, false
				}
				// A picked File, hashed by the digest worker reading it.
				d := wholeFiles.Load()
				f, _ := fsys.(*browser.Files)
				if d == nil || f == nil || runner.SHA256.Name() != digestWorkerKernel {
					return nil, false
				}
				v := f.Value(name)
				if !v.Truthy() {
					return nil, false
				}
				wholeHashed.Add(1)
				for _, pl := range pools {
					// With a pool: from the spans its dealer reads (feed.go).
					if pl.Files == f {
						if fd := pl.feedFor(ctx, d, name, &readByReader); fd != nil {
							return fd.wait, true
						}
					}
				}
				return d.hashFile(v, fileChunk, &readByReader), true
			},
		}
		event := func(e jobs.Event) {
			if b, err := report.JSON(e); err == nil {
				r.post(msg.Event{ID: id, JSON: string(b)}.Value())
			}
		}
		hits, stored := cacheHits(), cacheStored()
		var out *jobs.Output
		var err error
		if spec.Kind == jobs.KindCache {
			out, err = cacheJob(&spec)
		} else {
			out, err = runner.Run(ctx, &spec, host, event)
		}
		for _, pl := range pools {
			pl.Close() // workers started ahead that no audit took
		}
		// For the bench and the curious: the faults the reads survived,
		// and what the cache saved.
		var notes []string
		if n := reads.total(); n > 0 {
			notes = append(notes, fmt.Sprintf("%d range reads retried", n))
		}
		if n := cacheHits() - hits; n > 0 && spec.Kind != jobs.KindCache {
			notes = append(notes, progress.Bytes(n)+" read from the browser's cache")
		}
		if n := cacheStored() - stored; n > 0 && spec.Kind != jobs.KindCache {
			notes = append(notes, progress.Bytes(n)+" written to the browser's cache by "+cacheWriter())
		}
		if spec.Kind == jobs.KindAudit && !spec.NoDigest {
			line := "SHA-256: " + runner.SHA256.Name()
			fed, whole := 0, wholeHashed.Load()
			for _, pl := range pools {
				n, spans, read, _ := pl.FeedFigures()
				if n > 0 {
					what := "picked file"
					if pl.Files == nil {
						what = "URL file"
					} else {
						fed += n
					}
					line += fmt.Sprintf(", %s hashed from the pool's spans (%s of them; %s read for the digest alone)",
						report.Plural(n, what), progress.Bytes(spans), progress.Bytes(read))
				}
			}
			if n := whole - int64(fed); n > 0 {
				if readByReader.Load() == n {
					line += fmt.Sprintf(", %d picked files read beside it (digestread.js)", n)
				} else {
					line += fmt.Sprintf(", %d picked files read there", n)
				}
			}
			notes = append(notes, line)
		}
		if len(pools) > 0 { // the workers' memory, for the bench and the curious
			// A worker that reported nothing (the pairs were all dealt
			// before it had opened the adapter) is "idle", not "0 B", and
			// comes after those that worked.
			var mem, idle []string
			for _, pl := range pools {
				for _, b := range pl.Memory() {
					if b > 0 {
						mem = append(mem, progress.Bytes(b))
					} else {
						idle = append(idle, "idle")
					}
				}
			}
			mem = append(mem, idle...)
			notes = append(notes, "memory: engine worker "+progress.Bytes(msg.Memory())+", pool workers "+strings.Join(mem, ", "))
		}
		if len(notes) > 0 && err == nil && out != nil {
			note := strings.Join(notes, "; ")
			event(jobs.Event{Note: note})
			if out.Audit != nil && out.Audit.Summary.Kernel != "" {
				out.Audit.Summary.Kernel += "; " + note
			}
		}
		if err == nil {
			var b []byte
			arrays := jobs.TakeArrays(out) // beside the JSON, as numbers
			if b, err = report.JSON(out); err == nil {
				r.post(msg.Done{ID: id, JSON: string(b), Arrays: arrays}.Value())
				return
			}
		}
		r.post(msg.Fail{ID: id, Msg: err.Error()}.Value())
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

// httpOf is the HTTP source of a URL's files (nil: not a URL).
func httpOf(fsys fs.FS) *source.HTTP {
	switch f := fsys.(type) {
	case *source.HTTP:
		return f
	case *hub.FS:
		return f.HTTP
	}
	return nil
}

// windowFor is the digest window of a job: none for local files, whose
// digest reads them itself (in order, beside the pool: a local read is
// cheap), so that the pool workers read their spans straight from the
// File and the engine worker holds no span; digestWindow for URLs, whose
// bytes should cross the network once.
func windowFor(spec *jobs.Spec) int64 {
	if spec.Adapter != nil && spec.Adapter.Files != "" {
		return 0
	}
	return digestWindow
}

// digestWindow is how many bytes of a file an audit's digest holds while
// they wait for their turn (runner.Host.DigestWindow): the dealer's spans
// in flight, which arrive nearly in file order.
const digestWindow = 192 << 20

// openInput gives a job's input as files: a URL read by range, or the
// files the page attached under in.Files.
func openInput(in *jobs.Input, files js.Value) (fs.FS, error) {
	switch {
	case in.URL != "":
		fsys, err := runner.OpenURL(in) // a Hub source pinned to its commit, or any http(s) folder
		if err != nil {
			return nil, err
		}
		// What this worker reads of a URL beyond headers is read in order
		// (the digest pass after an audit; the pairs when no pool could
		// start): in windows as large as the pool's segments, one request
		// each instead of eight, and eight times fewer to fail.
		switch h := fsys.(type) {
		case *source.HTTP:
			h.ReadAhead = readAhead
		case *hub.FS:
			h.ReadAhead = readAhead
		}
		return fsys, nil
	case in.Files != "":
		if !files.Truthy() {
			return nil, errors.New("no files were attached")
		}
		list := files.Get(in.Files)
		if !list.Truthy() || list.Get("length").Int() == 0 {
			return nil, fmt.Errorf("no files chosen (%s)", in.Files)
		}
		if list.Get("item").Type() != js.TypeFunction { // an array of File
			// A dropped folder's files come with their paths in it (names).
			names := list.Get("names")
			f := browser.NewFiles()
			for i := 0; i < list.Length(); i++ {
				name := list.Index(i).Get("name").String()
				if names.Truthy() && names.Index(i).Truthy() {
					name = names.Index(i).String()
				}
				f.Add(list.Index(i), name)
			}
			return f, nil
		}
		return browser.FromFileList(list), nil
	}
	return nil, errors.New("neither a URL nor files")
}

// retryCount sums the retried range reads of a job's sources and pools.
type retryCount struct {
	mu   sync.Mutex
	from []interface{ Retries() int64 }
}

func (c *retryCount) add(r interface{ Retries() int64 }) {
	c.mu.Lock()
	c.from = append(c.from, r)
	c.mu.Unlock()
}

func (c *retryCount) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, r := range c.from {
		n += r.Retries()
	}
	return n
}

// poolURL is the pool workers' script: this worker's, marked (#pool):
// they hash nothing, so they start no digest worker.
func poolURL() string {
	self := js.Global().Get("location").Get("href").String()
	if i := strings.IndexByte(self, '#'); i >= 0 {
		self = self[:i]
	}
	return self + poolMark
}

// poolFor is a pool of nested workers to check an audit's pairs in, when
// this worker can start them (nil otherwise).
func poolFor(fsys fs.FS, opt audit.Options, onStart func(int, string, string)) *AuditPool {
	if !browser.CanUseWorkers() {
		return nil
	}
	spec, err := SpecOf(opt)
	if err != nil {
		return nil
	}
	pool := &AuditPool{N: Workers(), Dir: ".", Spec: spec, OnStart: onStart, WorkerURL: poolURL()}
	if h := httpOf(fsys); h != nil { // a Hub repository's: the resolved commit's resolve URLs
		pool.URL, pool.Token, pool.Src = h.Base.String(), h.Token, h
	} else if f, ok := fsys.(*browser.Files); ok {
		pool.Files = f
	} else {
		return nil
	}
	return pool
}
