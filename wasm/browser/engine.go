//go:build js && wasm

package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// The engine worker. The pages (app.wasm) hold no engine code: every job
// (wasm/jobs.Spec) goes to one long-lived Web Worker running engine.wasm,
// which runs it and answers. An audit there starts its own pool of workers
// (nested, the same engine.wasm) for the pairs, fetching their segments
// for them (AuditPool).
//
// Messages, page → engine worker:
//
//	{op: "job", id, spec: JSON, files: {key: FileList or [File]}}
//	{op: "cancel", id}
//
// engine worker → page:
//
//	{op: "ready", simd_error}
//	{op: "event", id, json} (a jobs.Event), then
//	{op: "done", id, json} (a jobs.Output) or {op: "fail", id, msg}.

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
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	return q
}

// startLocked starts the worker (e.mu held).
func (e *Engine) startLocked() {
	e.w = js.Global().Get("Worker").New(e.WorkerURL)
	e.calls, e.broken = map[int]*call{}, nil
	w := e.w
	// fail ends every pending call: the worker could not start (worker.js
	// says so with an "error" message) or died.
	fail := func(msg string) {
		msg += " (" + e.WorkerURL + ")"
		e.mu.Lock()
		if e.w.Equal(w) {
			e.broken = errors.New(msg)
		}
		calls := e.calls
		e.mu.Unlock()
		for id, c := range calls {
			o := js.Global().Get("Object").New()
			o.Set("op", "fail")
			o.Set("id", id)
			o.Set("msg", msg)
			c.push(o)
		}
	}
	onMsg := js.FuncOf(func(this js.Value, args []js.Value) any {
		d := args[0].Get("data")
		switch d.Get("op").String() {
		case "ready":
			return nil
		case "error":
			fail("the engine worker failed: " + d.Get("msg").String())
			return nil
		}
		id := d.Get("id")
		if id.Type() != js.TypeNumber {
			return nil
		}
		e.mu.Lock()
		c := e.calls[id.Int()]
		e.mu.Unlock()
		if c != nil {
			c.push(d)
		}
		return nil
	})
	onErr := js.FuncOf(func(this js.Value, args []js.Value) any {
		msg := "the engine worker failed"
		if m := args[0].Get("message"); m.Truthy() {
			msg += ": " + m.String()
		}
		fail(msg)
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
	msg := js.Global().Get("Object").New()
	msg.Set("op", "job")
	msg.Set("id", id)
	msg.Set("spec", string(b))
	fl := js.Global().Get("Object").New()
	for k, v := range files {
		fl.Set(k, v)
	}
	msg.Set("files", fl)
	w.Call("postMessage", msg)
	for {
		select {
		case <-ctx.Done():
			o := js.Global().Get("Object").New()
			o.Set("op", "cancel")
			o.Set("id", id)
			w.Call("postMessage", o)
			return nil, ctx.Err()
		case <-c.wake:
		}
		for _, d := range c.pop() {
			switch d.Get("op").String() {
			case "event":
				var ev jobs.Event
				if err := json.Unmarshal([]byte(d.Get("json").String()), &ev); err == nil && onEvent != nil {
					onEvent(ev)
				}
			case "done":
				var out jobs.Output
				if err := json.Unmarshal([]byte(d.Get("json").String()), &out); err != nil {
					return nil, fmt.Errorf("the engine's answer: %v", err)
				}
				return &out, nil
			case "fail":
				return nil, errors.New(d.Get("msg").String())
			}
		}
	}
}

// CanUseWorkers reports whether Web Workers exist here.
func CanUseWorkers() bool { return js.Global().Get("Worker").Type() == js.TypeFunction }
