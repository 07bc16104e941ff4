//go:build js && wasm

package worker

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/browser/msg"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

// Serve runs in a worker (engine.wasm's main): it answers the messages
// until the worker is terminated — the page's jobs (jobs.go) and, in a
// pool's worker, the audit's pairs (poolworker.go).
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
	post := func(m js.Value) { self.Call("postMessage", m) }
	// A WebAssembly memory never shrinks: what the heap once reached the
	// tab holds. A soft limit makes the collector work harder as the heap
	// nears it, rather than letting it double over the live set (which is
	// mostly span buffers, pointer-free and cheap to collect around).
	debug.SetMemoryLimit(memoryLimit)
	runner.SetReadAheadChunk(16 << 20)
	simdErr := ""
	if err := InstallSIMD(); err != nil {
		simdErr = err.Error()
	}
	if js.Global().Get("location").Get("hash").String() != poolMark {
		// The engine worker hashes the audits' files: on a thread of its
		// own once the digest worker has started and passed its check
		// (without it, here).
		go func() {
			var once sync.Once
			ready := func() { once.Do(func() { close(digestReady) }) }
			defer close(filesReady)
			defer ready()
			if err := installDigestWorker(ready); err != nil {
				js.Global().Get("console").Call("warn", "clefcheck: the files' SHA-256 stays in the engine worker: "+err.Error())
			}
		}()
		// Then the first audit's pool workers, warm (warm.go): after the
		// digest worker, so as not to take its start's core.
		go func() {
			<-digestReady
			<-filesReady
			if browser.CanUseWorkers() {
				startWarm()
			}
		}()
	} else {
		close(digestReady)
		close(filesReady)
	}
	post(msg.Ready{SIMDError: simdErr}.Value())
	jobs := &jobRunner{cancels: map[int]context.CancelFunc{}, post: post}
	pool := &poolWorker{post: post}
	for m := range msgs {
		switch msg.OpOf(m) {
		case msg.OpJob:
			jobs.start(msg.JobOf(m))
		case msg.OpCancel:
			jobs.cancel(msg.CancelOf(m).ID)
		case msg.OpStacks:
			logStacks(msg.StacksOf(m).Why)
		case msg.OpOpen:
			pool.open(msg.OpenOf(m))
		case msg.OpPiece:
			pool.piece(msg.PieceOf(m))
		case msg.OpPairs:
			pool.pairs(msg.PairsOf(m))
		}
	}
}

// logStacks writes every goroutine's stack to the console as one line
// (a log keeps it whole), clipped: where a job that got no answer waits.
func logStacks(why string) {
	buf := make([]byte, 256<<10)
	buf = buf[:runtime.Stack(buf, true)]
	s := strings.ReplaceAll(string(buf), "\n", " ⏎ ")
	if len(s) > 64<<10 {
		s = s[:64<<10] + " …"
	}
	js.Global().Get("console").Call("error", "clefcheck: the engine worker's goroutines ("+why+"): "+s)
}

// digestReady is closed once the digest worker is installed, or has
// failed to be (audit jobs wait for it a little).
var digestReady = make(chan struct{})

// filesReady is closed once the digest worker's picked-file check is done
// (passed or not): audits of picked files wait for it, so that their files
// are hashed there (wholeFiles) rather than in the engine worker.
var filesReady = make(chan struct{})

// poolMark ends the URL of an audit pool's workers (jobs.go).
const poolMark = "#pool"

// memoryLimit is each worker's soft memory limit (runtime/debug): about
// the spans in flight, the digest window and the caches, with room.
const memoryLimit = 384 << 20
