//go:build js && wasm

package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
	"syscall/js"
	"time"

	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/wasmsimd"
)

// The digest worker (public/digest.js): the engine worker's SHA-256 on a
// thread of its own. An audit hashes every byte of its files as the spans
// pass through the engine worker; hashed there, at about 250 MB/s, the
// engine worker's thread is busy for 5–6 s of the twin's audit, and while
// it is, it drains none of the fetches in flight (a worker's fetch bodies
// are read on its own thread), so the download waits for the hash. Posted
// to the digest worker instead, the bytes cost the engine worker one copy
// and the hash runs beside it.
//
// The messages are public/digest.js's. The engine worker keeps at most
// digestInflight bytes posted and not yet hashed (Write waits for the
// worker's acks beyond that): memory stays bounded when the hash falls
// behind the network.

// digestInflight bounds the bytes posted to the digest worker and not yet
// hashed.
const digestInflight = 64 << 20

// digestBatch is how many bytes of small writes are gathered before they
// are posted (a write of at least this many goes as it is).
const digestBatch = 1 << 20

// digestPiece is the size of the ArrayBuffers the bytes go in: the worker
// hands each back with its ack, and the engine worker fills it again (a
// fresh one costs several times the copy into it: V8 maps and zeroes its
// memory each time). At most digestFree of them are kept.
const (
	digestPiece = 8 << 20
	digestFree  = 12
)

// digestTimeout bounds the wait for the digest worker's answer (a sum, or
// room in flight): it hashes 64 MiB in well under a second.
const digestTimeout = 60 * time.Second

// digestWorker is the running public/digest.js.
type digestWorker struct {
	w     js.Value
	onMsg js.Func
	onErr js.Func

	mu       sync.Mutex
	next     int
	sums     map[int][]chan digestReply // by hash, in the order asked
	inflight int64
	free     []js.Value             // ArrayBuffers of digestPiece bytes handed back
	backs    map[int]func(js.Value) // by tag: where a buffer posted with one goes back (postBuf)
	tags     int
	freed    chan struct{} // a token when acks free room
	err      error         // the worker failed: every hash fails
}

type digestReply struct {
	sum  []byte
	secs float64 // a whole file's: the seconds it took the worker
	// reader: a whole file read by the worker's file reader
	// (public/digestread.js), not on the worker's own thread
	reader bool
	err    error
}

// startDigestWorker starts public/digest.js beside this worker's script
// and hands it the compression function; it waits (at most digestTimeout)
// for the worker to say it is ready.
func startDigestWorker(code []byte) (*digestWorker, error) {
	loc := js.Global().Get("location")
	if !loc.Truthy() || js.Global().Get("Worker").Type() != js.TypeFunction {
		return nil, errors.New("no Worker here")
	}
	// With this worker's query: its version (worker.js).
	u := js.Global().Get("URL").New("digest.js"+loc.Get("search").String(), loc.Get("href")).Call("toString").String()
	d := &digestWorker{sums: map[int][]chan digestReply{}, freed: make(chan struct{}, 1)}
	ready := make(chan error, 1)
	d.onMsg = js.FuncOf(func(this js.Value, args []js.Value) any {
		m := args[0].Get("data")
		if m.Get("ready").Truthy() {
			select {
			case ready <- nil:
			default:
			}
			return nil
		}
		d.answer(m)
		return nil
	})
	d.onErr = js.FuncOf(func(this js.Value, args []js.Value) any {
		msg := "the digest worker failed"
		if s := args[0].Get("message"); s.Truthy() {
			msg += ": " + s.String()
		}
		d.fail(errors.New(msg + " (" + u + ")"))
		select {
		case ready <- errors.New(msg):
		default:
		}
		return nil
	})
	d.w = js.Global().Get("Worker").New(u)
	d.w.Set("onmessage", d.onMsg)
	d.w.Set("onerror", d.onErr)
	u8 := js.Global().Get("Uint8Array").New(len(code))
	js.CopyBytesToJS(u8, code)
	d.w.Call("postMessage", map[string]any{"code": u8})
	select {
	case err := <-ready:
		if err != nil {
			d.stop()
			return nil, err
		}
	case <-time.After(digestTimeout):
		d.stop()
		return nil, fmt.Errorf("the digest worker (%s) did not start within %v", u, digestTimeout)
	}
	return d, nil
}

func (d *digestWorker) stop() {
	d.w.Call("terminate")
	d.fail(errors.New("the digest worker was stopped"))
}

// answer takes an ack, a sum or an error from the worker (its message
// handler: it must not block).
func (d *digestWorker) answer(m js.Value) {
	if t := m.Get("tag"); t.Type() == js.TypeNumber {
		d.mu.Lock()
		back := d.backs[t.Int()]
		delete(d.backs, t.Int())
		d.mu.Unlock()
		if back != nil {
			back(m.Get("buf")) // a span's buffer, to its dealer
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if b := m.Get("buf"); b.Truthy() && m.Get("tag").Type() != js.TypeNumber && b.Get("byteLength").Int() == digestPiece && len(d.free) < digestFree {
		d.free = append(d.free, b)
	}
	if a := m.Get("ack"); a.Type() == js.TypeNumber && a.Int() > 0 {
		d.inflight -= int64(a.Int())
		select {
		case d.freed <- struct{}{}:
		default:
		}
	}
	id := m.Get("id")
	if id.Type() != js.TypeNumber {
		return
	}
	var r digestReply
	if e := m.Get("error"); e.Truthy() {
		je := &browser.JSError{Msg: "the digest worker: " + e.String()}
		if n := m.Get("name"); n.Type() == js.TypeString {
			je.Name = n.String() // a picked file changed: BlobError
		}
		r.err = je
	} else if s := m.Get("sum"); s.Truthy() && s.Length() == sha256.Size {
		r.sum = make([]byte, sha256.Size)
		js.CopyBytesToGo(r.sum, s)
		if v := m.Get("seconds"); v.Type() == js.TypeNumber {
			r.secs = v.Float()
		}
		r.reader = m.Get("reader").Truthy()
	} else {
		return
	}
	if q := d.sums[id.Int()]; len(q) > 0 {
		q[0] <- r // buffered: one answer per ask
		if len(q) == 1 {
			delete(d.sums, id.Int())
		} else {
			d.sums[id.Int()] = q[1:]
		}
	} else if r.err != nil {
		d.err = r.err // an error in a write: that hash is spoilt
	}
}

// fail marks the worker failed and wakes everyone waiting.
func (d *digestWorker) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
	}
	for id, q := range d.sums {
		for _, c := range q {
			c <- digestReply{err: d.err}
		}
		delete(d.sums, id)
	}
	select {
	case d.freed <- struct{}{}:
	default:
	}
}

// post sends b to hash id, in pieces of at most digestPiece bytes.
func (d *digestWorker) post(id int, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), digestPiece)
		if err := d.postPiece(id, b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// reserve waits for room in flight for n bytes, and takes it.
func (d *digestWorker) reserve(n int64) error {
	deadline := time.Now().Add(digestTimeout)
	for {
		d.mu.Lock()
		err, room := d.err, d.inflight+n <= digestInflight || d.inflight == 0
		if err == nil && room {
			d.inflight += n
		}
		d.mu.Unlock()
		if err != nil {
			return err
		}
		if room {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the digest worker took no bytes for %v", digestTimeout)
		}
		select { // an ack, or a look again
		case <-d.freed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// postPiece sends b (copied into an ArrayBuffer handed back earlier, or a
// new one; transferred) to hash id, first waiting for room in flight.
func (d *digestWorker) postPiece(id int, b []byte) error {
	if err := d.reserve(int64(len(b))); err != nil {
		return err
	}
	err := jsCall(func() {
		var ab js.Value
		if len(b) >= digestPiece/2 { // a large piece: in a buffer handed back, or a new one of the size kept
			ab = d.piece()
		} else { // a small one (a batch of small writes, the check's): its own size
			ab = js.Global().Get("ArrayBuffer").New(len(b))
		}
		js.CopyBytesToJS(js.Global().Get("Uint8Array").New(ab, 0, len(b)), b)
		d.w.Call("postMessage", map[string]any{"id": id, "buf": ab, "n": len(b)}, []any{ab})
	})
	if err != nil { // not posted: no ack comes
		d.mu.Lock()
		d.inflight -= int64(len(b))
		d.mu.Unlock()
	}
	return err
}

// piece is an ArrayBuffer of digestPiece bytes: one the worker handed
// back, or a new one.
func (d *digestWorker) piece() js.Value {
	var ab js.Value
	d.mu.Lock()
	if k := len(d.free); k > 0 {
		ab, d.free = d.free[k-1], d.free[:k-1]
	}
	d.mu.Unlock()
	if !ab.Truthy() {
		ab = js.Global().Get("ArrayBuffer").New(digestPiece)
	}
	return ab
}

// jsCall runs f, turning a JavaScript exception it meets (an allocation
// refused, a worker gone) into an error instead of a panic that would end
// the engine worker.
func jsCall(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("the digest worker: %w", e)
				return
			}
			err = fmt.Errorf("the digest worker: %v", r)
		}
	}()
	f()
	return nil
}

// ask sends a control message for hash id; for "sum", the channel gets
// the answer (nil for the others).
func (d *digestWorker) ask(id int, what string) (<-chan digestReply, error) {
	c := make(chan digestReply, 1)
	d.mu.Lock()
	if d.err != nil {
		err := d.err
		d.mu.Unlock()
		return nil, err
	}
	if what == "sum" {
		d.sums[id] = append(d.sums[id], c)
	}
	d.mu.Unlock()
	d.w.Call("postMessage", map[string]any{"id": id, what: true})
	if what != "sum" {
		return nil, nil
	}
	return c, nil
}

// wait is the answer on c, or an error after digestTimeout.
func (d *digestWorker) wait(id int, c <-chan digestReply) ([]byte, error) {
	select {
	case r := <-c:
		return r.sum, r.err
	case <-time.After(digestTimeout):
		err := fmt.Errorf("the digest worker gave no digest within %v", digestTimeout)
		d.fail(err) // every hash in it is in doubt now
		return nil, err
	}
}

// hasher is a factory for runner.SHA256: hashes computed in the worker.
func (d *digestWorker) hasher() func() hash.Hash {
	return func() hash.Hash {
		d.mu.Lock()
		d.next++
		id := d.next
		d.mu.Unlock()
		return &remoteSHA256{d: d, id: id} // its batch grows as it is written
	}
}

// remoteSHA256 is a hash.Hash computed by the digest worker. The first
// failure sticks: Err reports it, and Sum then returns nil (the runner
// reports that the digest could not be computed, never a wrong one).
type remoteSHA256 struct {
	d     *digestWorker
	id    int
	batch []byte
	err   error
}

func (h *remoteSHA256) flush() {
	if len(h.batch) == 0 || h.err != nil {
		h.batch = h.batch[:0]
		return
	}
	h.err = h.d.post(h.id, h.batch)
	h.batch = h.batch[:0]
}

func (h *remoteSHA256) Write(p []byte) (int, error) {
	if h.err != nil {
		return 0, h.err
	}
	if len(p) >= digestBatch {
		h.flush()
		if h.err == nil {
			h.err = h.d.post(h.id, p)
		}
		return len(p), h.err
	}
	if len(h.batch)+len(p) > digestBatch {
		h.flush()
	}
	h.batch = append(h.batch, p...)
	return len(p), h.err
}

func (h *remoteSHA256) Sum(in []byte) []byte {
	c := h.sumLater()
	if h.err != nil {
		return nil
	}
	s, err := h.d.wait(h.id, c)
	if err != nil {
		h.err = err
		return nil
	}
	return append(in, s...)
}

// sumLater asks for the digest of what was written so far; the channel
// gets it (nil, with h.err set, when it cannot be asked).
func (h *remoteSHA256) sumLater() <-chan digestReply {
	h.flush()
	if h.err != nil {
		return nil
	}
	c, err := h.d.ask(h.id, "sum")
	if err != nil {
		h.err = err
	}
	return c
}

func (h *remoteSHA256) Reset() {
	h.batch, h.err = h.batch[:0], nil
	h.d.ask(h.id, "reset")
}

// Err is the first failure of this hash (nil: none).
func (h *remoteSHA256) Err() error { return h.err }

func (h *remoteSHA256) Size() int      { return sha256.Size }
func (h *remoteSHA256) BlockSize() int { return sha256.BlockSize }

// installDigestWorker starts the digest worker and, once its hashes agree with
// crypto/sha256, installs them as runner.SHA256 and calls installed (before the
// slower picked-file check); else it says why (the in-thread kernel stays).
func installDigestWorker(installed func()) error {
	d, err := startDigestWorker(wasmsimd.Module())
	if err != nil {
		return err
	}
	f := d.hasher()
	if err := d.check(f); err != nil {
		d.stop()
		return fmt.Errorf("the digest worker's SHA-256 is wrong: %w", err)
	}
	runner.SHA256.Install(digestWorkerKernel, f)
	digests.Store(d)
	installed()
	if err := d.checkFiles(); err != nil {
		js.Global().Get("console").Call("warn", "clefcheck: the digest worker does not read picked files itself: "+err.Error())
		return nil
	}
	wholeFiles.Store(d)
	return nil
}

// wholeFiles is the digest worker once it hashes picked files itself
// correctly (checkFiles): a local file's digest is then its work alone,
// read there from the File, the engine worker reading and copying none of
// its bytes for it (runner.Host.HashFile).
var wholeFiles atomic.Pointer[digestWorker]

// fileChunk is how many bytes of a picked File the digest worker reads at
// a time.
const fileChunk = 16 << 20

// hashFile asks the worker to hash the whole of file (a Blob: a picked
// File), reading it chunk bytes at a time; the function returned waits for
// the digest and the seconds the worker took. There is no time limit (a
// large file takes as long as it takes); the worker's failure answers
// every wait.
//
// Each file the worker's file reader read adds one to byReader (if not nil).
func (d *digestWorker) hashFile(file js.Value, chunk int, byReader *atomic.Int64) func(context.Context) ([]byte, float64, error) {
	c := make(chan digestReply, 1)
	d.mu.Lock()
	d.next++
	id := d.next
	err := d.err
	if err == nil {
		d.sums[id] = append(d.sums[id], c)
	}
	d.mu.Unlock()
	if err == nil {
		if err = jsCall(func() { d.w.Call("postMessage", map[string]any{"id": id, "file": file, "chunk": chunk}) }); err != nil {
			d.mu.Lock()
			delete(d.sums, id)
			d.mu.Unlock()
		}
	}
	return func(ctx context.Context) ([]byte, float64, error) {
		if err != nil {
			return nil, 0, err
		}
		select {
		case r := <-c:
			if r.reader && byReader != nil {
				byReader.Add(1)
			}
			if r.err != nil {
				return nil, 0, browser.BlobError(r.err, file.Get("name").String())
			}
			return r.sum, r.secs, nil
		case <-ctx.Done():
			d.mu.Lock()
			delete(d.sums, id) // a dropped hash answers nothing
			d.mu.Unlock()
			d.w.Call("postMessage", map[string]any{"id": id, "drop": true})
			return nil, 0, ctx.Err()
		}
	}
}
