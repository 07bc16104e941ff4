//go:build js && wasm

package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/browser/msg"
	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// The engine worker. The pages (app.wasm) hold no engine code: every job
// (wasm/jobs.Spec) goes to one long-lived Web Worker running engine.wasm
// (package worker), which runs it and answers; the messages are package
// msg's (Job and Cancel to the worker; Event, then Done or Fail back; Ready
// and Error from any worker). An audit there starts its own pool of workers
// (nested, the same engine.wasm) for the pairs, fetching their segments
// for them (worker.AuditPool).

// Engine is the page's side: it starts the engine worker on first use
// and runs jobs in it. It is safe for concurrent use.
type Engine struct {
	WorkerURL string

	mu       sync.Mutex
	w        js.Value
	funcs    []js.Func
	next     int
	calls    map[int]*call
	broken   error // the worker failed; the next Run starts a new one
	ready    bool  // the worker said Ready
	restarts int   // workers started again because one did not start
}

type call struct {
	mu    sync.Mutex
	queue []js.Value
	wake  chan struct{}
	job   js.Value // the msg.Job posted, posted again to a restarted worker
}

// startTimeout is how long a worker has to say Ready (it compiles
// engine.wasm, checks its kernels) before it is started again, once. It is
// a guard, not the fix of something observed: a worker that never starts
// (its script or engine.wasm never arriving) would otherwise leave its
// jobs waiting forever.
const startTimeout = 30 * time.Second

func (c *call) push(v js.Value) {
	c.mu.Lock()
	c.queue = append(c.queue, v)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *call) pop() []js.Value {
	c.mu.Lock()
	q := c.queue
	c.queue = nil
	c.mu.Unlock()
	return q
}

// startLocked starts the worker (e.mu held).
func (e *Engine) startLocked() {
	u := e.WorkerURL
	if e.restarts > 0 { // a worker started again says so (to the tests)
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += fmt.Sprintf("%srestart=%d", sep, e.restarts)
	}
	e.w = js.Global().Get("Worker").New(u)
	e.calls, e.broken, e.ready = map[int]*call{}, nil, false
	w := e.w
	time.AfterFunc(startTimeout, func() { e.notStarted(w) })
	// fail ends every pending call: the worker could not start (worker.js
	// says so with an "error" message) or died.
	fail := func(m string) {
		m += " (" + e.WorkerURL + ")"
		e.mu.Lock()
		if e.w.Equal(w) {
			e.broken = errors.New(m)
		}
		calls := e.calls
		e.mu.Unlock()
		for id, c := range calls {
			c.push(msg.Fail{ID: id, Msg: m}.Value())
		}
	}
	onMsg := js.FuncOf(func(this js.Value, args []js.Value) any {
		d := args[0].Get("data")
		switch msg.OpOf(d) {
		case msg.OpReady:
			e.mu.Lock()
			if e.w.Equal(w) {
				e.ready = true
			}
			e.mu.Unlock()
			return nil
		case msg.OpError:
			fail("the engine worker failed: " + msg.ErrorOf(d).Msg)
			return nil
		}
		id, ok := msg.IDOf(d)
		if !ok {
			return nil
		}
		e.mu.Lock()
		c := e.calls[id]
		e.mu.Unlock()
		if c != nil {
			c.push(d)
		}
		return nil
	})
	onErr := js.FuncOf(func(this js.Value, args []js.Value) any {
		m := "the engine worker failed"
		if s := args[0].Get("message"); s.Truthy() {
			m += ": " + s.String()
		}
		fail(m)
		return nil
	})
	e.funcs = append(e.funcs, onMsg, onErr)
	w.Set("onmessage", onMsg)
	w.Set("onerror", onErr)
}

// notStarted: worker w has not said Ready within startTimeout. The first
// time, a new worker takes its jobs (they are posted to it again); after
// that, its jobs fail with the reason, and the next Run starts afresh.
func (e *Engine) notStarted(w js.Value) {
	e.mu.Lock()
	if !e.w.Equal(w) || e.ready || e.broken != nil {
		e.mu.Unlock()
		return
	}
	if e.restarts == 0 {
		e.restarts++
		calls := e.calls
		e.stopLocked()
		e.startLocked()
		e.calls = calls
		for _, c := range calls {
			e.w.Call("postMessage", c.job)
		}
		js.Global().Get("console").Call("warn", fmt.Sprintf("clefcheck: the engine worker did not start within %v; started again (%d jobs)", startTimeout, len(calls)))
		e.mu.Unlock()
		return
	}
	e.broken = fmt.Errorf("the engine worker did not start within %v, twice (%s)", startTimeout, e.WorkerURL)
	calls := e.calls
	e.mu.Unlock()
	for id, c := range calls {
		c.push(msg.Fail{ID: id, Msg: e.broken.Error()}.Value())
	}
}

// Reset stops the engine worker: its jobs fail with why, and the next Run
// starts a new one (a page's watchdog: a job with no answer in its time,
// whose Run asked the worker for its goroutines' stacks as it gave up). The
// worker has a second to write them before it is stopped; a job started
// meanwhile is stopped with it.
func (e *Engine) Reset(why string) {
	time.Sleep(time.Second)
	e.mu.Lock()
	calls := e.calls
	e.stopLocked()
	e.w, e.calls = js.Undefined(), map[int]*call{}
	e.mu.Unlock()
	for id, c := range calls {
		c.push(msg.Fail{ID: id, Msg: why}.Value())
	}
}

// stopLocked terminates the worker and releases its handlers (e.mu held).
func (e *Engine) stopLocked() {
	if e.w.Truthy() {
		e.w.Call("terminate")
	}
	for _, f := range e.funcs {
		f.Release()
	}
	e.funcs = nil
}

// Run runs spec in the engine worker: files maps the keys of the spec's
// "files" inputs to FileLists (or arrays of File), onEvent (may be nil)
// gets the job's events in order.
func (e *Engine) Run(ctx context.Context, spec *jobs.Spec, files map[string]js.Value, onEvent func(jobs.Event)) (*jobs.Output, error) {
	if !CanUseWorkers() {
		return nil, errors.New("this browser cannot run Web Workers, which clefcheck's engine runs in")
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	fl := js.Global().Get("Object").New()
	for k, v := range files {
		fl.Set(k, v)
	}
	start := time.Now()
	e.mu.Lock()
	if !e.w.Truthy() || e.broken != nil {
		e.stopLocked() // the old worker, if any
		e.startLocked()
	}
	e.next++
	id := e.next
	c := &call{wake: make(chan struct{}, 1), job: msg.Job{ID: id, Spec: string(b), Files: fl}.Value()}
	e.calls[id] = c
	e.w.Call("postMessage", c.job)
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.calls, id)
		e.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			e.mu.Lock()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// No answer in the caller's time (a page's watchdog): the
				// worker's goroutines go to the console first, where the
				// job waits — the cancel that follows ends that wait.
				why := fmt.Sprintf("%s job %d: no answer after %v, its time limit", spec.Kind, id, time.Since(start).Round(time.Second))
				e.w.Call("postMessage", msg.Stacks{Why: why}.Value())
			}
			e.w.Call("postMessage", msg.Cancel{ID: id}.Value())
			e.mu.Unlock()
			return nil, ctx.Err()
		case <-c.wake:
		}
		for _, d := range c.pop() {
			switch msg.OpOf(d) {
			case msg.OpEvent:
				var ev jobs.Event
				if err := json.Unmarshal([]byte(msg.EventOf(d).JSON), &ev); err == nil && onEvent != nil {
					onEvent(ev)
				}
			case msg.OpDone:
				var out jobs.Output
				m := msg.DoneOf(d)
				if err := json.Unmarshal([]byte(m.JSON), &out); err != nil {
					return nil, fmt.Errorf("the engine's answer: %v", err)
				}
				if m.BadArrays || jobs.PutArrays(&out, m.Arrays) != nil { // its σ, beside the JSON
					return nil, errors.New("the engine's answer: its arrays do not fit its matrices")
				}
				return &out, nil
			case msg.OpFail:
				return nil, errors.New(msg.FailOf(d).Msg)
			}
		}
	}
}

// Stacks asks the engine worker, if one runs, to write every goroutine's
// stack to the console (msg.Stacks), and says what state it is in: for a
// report on a page that waits in vain.
func (e *Engine) Stacks(why string) string {
	if !e.mu.TryLock() { // called from JavaScript: it must not wait
		return "the engine's lock is held (by a goroutine below)"
	}
	defer e.mu.Unlock()
	if !e.w.Truthy() {
		return "no engine worker"
	}
	e.w.Call("postMessage", msg.Stacks{Why: why}.Value())
	ids := make([]int, 0, len(e.calls))
	for id := range e.calls {
		ids = append(ids, id)
	}
	return fmt.Sprintf("engine worker: ready %v, broken %v, restarts %d, jobs waiting %v", e.ready, e.broken, e.restarts, ids)
}

// CanUseWorkers reports whether Web Workers exist here.
func CanUseWorkers() bool { return js.Global().Get("Worker").Type() == js.TypeFunction }
