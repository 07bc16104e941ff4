//go:build js && wasm

package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

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

	mu     sync.Mutex
	w      js.Value
	funcs  []js.Func
	next   int
	calls  map[int]*call
	broken error // the worker failed; the next Run starts a new one
}

type call struct {
	mu    sync.Mutex
	queue []js.Value
	wake  chan struct{}
}

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
	e.w = js.Global().Get("Worker").New(e.WorkerURL)
	e.calls, e.broken = map[int]*call{}, nil
	w := e.w
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
	e.mu.Lock()
	if !e.w.Truthy() || e.broken != nil {
		if e.w.Truthy() {
			e.w.Call("terminate")
			for _, f := range e.funcs { // the old worker's handlers
				f.Release()
			}
			e.funcs = nil
		}
		e.startLocked()
	}
	e.next++
	id := e.next
	c := &call{wake: make(chan struct{}, 1)}
	e.calls[id] = c
	w := e.w
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.calls, id)
		e.mu.Unlock()
	}()
	fl := js.Global().Get("Object").New()
	for k, v := range files {
		fl.Set(k, v)
	}
	w.Call("postMessage", msg.Job{ID: id, Spec: string(b), Files: fl}.Value())
	for {
		select {
		case <-ctx.Done():
			w.Call("postMessage", msg.Cancel{ID: id}.Value())
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
				if err := json.Unmarshal([]byte(msg.DoneOf(d).JSON), &out); err != nil {
					return nil, fmt.Errorf("the engine's answer: %v", err)
				}
				return &out, nil
			case msg.OpFail:
				return nil, errors.New(msg.FailOf(d).Msg)
			}
		}
	}
}

// CanUseWorkers reports whether Web Workers exist here.
func CanUseWorkers() bool { return js.Global().Get("Worker").Type() == js.TypeFunction }
