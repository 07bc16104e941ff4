//go:build js && wasm

package worker

import (
	"sync"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/browser/msg"
)

// Warm workers: the engine worker holds one audit's pool workers started
// before the audit, so that an audit finds them ready. A pool worker takes
// about a third of a second of a core to be ready (engine.wasm instantiated
// from the engine worker's compiled module, its Go runtime started, its
// SIMD kernels compiled and checked): started with the audit, that is spent
// while the audit reads and computes, and on two cores the audit then waits
// for it (on the bench machine, a quick audit of the twin's picked files
// found its workers ready 0.25-0.45 s after it started, 0.1-0.2 s after the
// inventory was taken).
//
// The set is started once the engine worker is ready (its digest worker
// installed), and again a second after the last running audit's pool is
// stopped: one audit's workers are never another's (each is stopped with
// its audit, its memory with it). While an audit runs none is started: it
// would take the audit's cores. An idle warm worker holds its Go memory, a
// few tens of MB, beside the engine worker's.
type warmSet struct {
	url     string
	workers []js.Value
	msgs    chan workerMsg
	stop    func()
}

var warm struct {
	mu     sync.Mutex
	on     bool     // this worker warms (the engine worker, where workers can start)
	set    *warmSet // held, not yet taken
	active int      // pools whose workers run (taken or started by launch)
}

// startWarm lets this worker warm pool workers from now on, and warms the
// first set.
func startWarm() {
	warm.mu.Lock()
	warm.on = true
	warm.mu.Unlock()
	warmUp()
}

// warmUp starts a warm set when this worker warms, holds none, and runs no
// audit.
func warmUp() {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	if !warm.on || warm.set != nil || warm.active > 0 {
		return
	}
	url, n := poolURL(), Workers()
	msgs := make(chan workerMsg, 4*n)
	workers, stop := startWorkers(url, n, msgs)
	warm.set = &warmSet{url: url, workers: workers, msgs: msgs, stop: stop}
}

// takeWarm counts a pool that starts n workers from url, and gives it the
// warm set when that fits (nil when there is none, or it does not fit: it
// is stopped then). The pool calls poolDone once its workers are stopped.
func takeWarm(url string, n int) *warmSet {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	warm.active++
	s := warm.set
	warm.set = nil
	if s == nil {
		return nil
	}
	if s.url != url || len(s.workers) != n || s.failed() {
		s.stop()
		return nil
	}
	return s
}

// poolDone: a pool's workers are stopped; when none runs a moment later,
// the next audit's are warmed (the moment is the page's, to show the
// verdict on both cores).
func poolDone() {
	warm.mu.Lock()
	warm.active--
	warm.mu.Unlock()
	time.AfterFunc(refillAfter, warmUp)
}

// refillAfter is how long after an audit's pool stopped the next audit's
// is warmed.
const refillAfter = time.Second

// failed tells whether one of the set's workers has reported an error
// (one that could not start): a pool then starts its own rather than
// failing for a worker that broke while it waited. The messages are put
// back in order. Nothing else can post to the channel meanwhile: the
// workers' handlers run only when every goroutine of this worker waits,
// and nothing here waits.
func (s *warmSet) failed() bool {
	var held []workerMsg
	bad := false
	for len(s.msgs) > 0 {
		m := <-s.msgs
		bad = bad || msg.OpOf(m.v) == msg.OpError
		held = append(held, m)
	}
	for _, m := range held {
		s.msgs <- m
	}
	return bad
}
