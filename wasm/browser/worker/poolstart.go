//go:build js && wasm

package worker

import (
	"sync"
	"sync/atomic"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/browser/msg"
)

// The pool's workers: started by Remote, or ahead of it (Start).

// Start takes the pool's workers now, warm (warm.go) or started, and has
// them open picked files (msg.Open, queued until each runs), while the
// engine worker takes its own inventory: a worker started now takes about
// a third of a second to be ready (engine.wasm instantiated, its kernels
// checked) and a tenth more to open the adapter, which Remote, called once
// the inventory is taken, no longer waits for. Close stops them if Remote
// never ran.
func (p *AuditPool) Start() {
	if p.pre != nil {
		return
	}
	p.pre, p.preMsgs, p.preStop = p.launch(max(1, p.N))
	if p.Files == nil {
		// From a URL the workers open the adapter once Remote runs, when
		// the engine worker has found it there: a server that is slow,
		// hostile or wrong gets no requests from them before.
		return
	}
	open := p.openMsg()
	for _, w := range p.pre {
		w.Call("postMessage", open)
	}
	p.preOpened = true
}

// Close stops workers started ahead that no Remote took.
func (p *AuditPool) Close() {
	if p.preStop != nil {
		p.preStop()
		p.pre, p.preStop = nil, nil
	}
}

// workerMsg is a message from pool worker w.
type workerMsg struct {
	w int
	v js.Value
}

// launch gives the pool n workers and the channel of their messages: the
// engine worker's warm ones when it holds them (warm.go), else started now;
// stop stops them (once), and lets the engine worker warm the next audit's.
func (p *AuditPool) launch(n int) ([]js.Value, chan workerMsg, func()) {
	var workers []js.Value
	var msgs chan workerMsg
	var stopWorkers func()
	if w := takeWarm(p.WorkerURL, n); w != nil {
		workers, msgs, stopWorkers = w.workers, w.msgs, w.stop
		p.warm = true
	} else {
		msgs = make(chan workerMsg, 4*n)
		workers, stopWorkers = startWorkers(p.WorkerURL, n, msgs)
	}
	var once sync.Once
	return workers, msgs, func() {
		once.Do(func() {
			stopWorkers()
			poolDone()
		})
	}
}

// startWorkers starts n pool workers from url posting into msgs; stop
// terminates them and releases their handlers.
func startWorkers(url string, n int, msgs chan<- workerMsg) (workers []js.Value, stop func()) {
	workers = make([]js.Value, n)
	var funcs []js.Func
	stopped := make(chan struct{})
	heard := make([]atomic.Bool, n) // worker i has posted a message
	for i := range workers {
		w := js.Global().Get("Worker").New(url)
		onMsg := js.FuncOf(func(this js.Value, args []js.Value) any {
			heard[i].Store(true)
			msgs <- workerMsg{i, args[0].Get("data")}
			return nil
		})
		onErr := js.FuncOf(func(this js.Value, args []js.Value) any {
			// Handled here: not passed on to this worker's own scope, where
			// it would read as the engine worker failing (a worker stopped
			// while its scripts load, its audit cancelled, fails so).
			args[0].Call("preventDefault")
			m := "the audit worker failed to start"
			if s := args[0].Get("message"); s.Truthy() {
				m += ": " + s.String()
			}
			e := workerMsg{i, msg.Error{Msg: m + " (" + url + ")"}.Value()}
			go func() { // never blocking the event loop, never lost
				select {
				case msgs <- e:
				case <-stopped:
				}
			}()
			return nil
		})
		funcs = append(funcs, onMsg, onErr)
		w.Set("onmessage", onMsg)
		w.Set("onerror", onErr)
		// First, always (the worker waits for it): this worker's compiled
		// engine.wasm, which the pool worker instantiates instead of
		// compiling its own (msg.Module).
		w.Call("postMessage", msg.Module{Module: js.Global().Get("clefcheckModule")}.Value())
		workers[i] = w
	}
	return workers, func() {
		close(stopped)
		// A worker that has not yet said anything may be loading its
		// scripts: stopped then, it fails in this worker's scope (as if
		// this worker had failed). It is stopped once it has loaded
		// (clefcheckRetire, in public/clefcheck.js).
		retire := js.Global().Get("clefcheckRetire")
		for i, w := range workers {
			switch {
			case !w.Truthy():
			case retire.Type() == js.TypeFunction:
				retire.Invoke(w, heard[i].Load())
			default:
				w.Call("terminate")
			}
		}
		if retire.Type() != js.TypeFunction {
			return // the handlers stay: released, an event would find none
		}
		for _, f := range funcs {
			f.Release()
		}
	}
}

// openMsg is the msg.Open every pool worker gets once it is ready.
func (p *AuditPool) openMsg() js.Value {
	m := msg.Open{Dir: p.Dir, Spec: p.Spec}
	if p.Files == nil {
		m.URL, m.Token = p.URL, p.Token
		if p.Src != nil { // what the inventory's probes learnt
			for _, h := range p.Src.Heads() {
				m.Heads = append(m.Heads, msg.Head(h))
			}
		}
		return m.Value()
	}
	m.Files, m.Names = js.Global().Get("Array").New(), js.Global().Get("Array").New()
	for _, name := range p.Files.Names() {
		m.Files.Call("push", p.Files.Value(name))
		m.Names.Call("push", name)
	}
	return m.Value()
}
