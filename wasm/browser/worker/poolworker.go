//go:build js && wasm

package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/browser/msg"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// AuditSpec is what a pool worker needs besides the files: the audit's
// mode and claims, as JSON (msg.Open's Spec).
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

// options are the pool worker's audit options. It reads no extraction
// report: the engine worker's audit has the one it holds (beside the
// adapter or picked apart), parsed once, and sends the pairs' singular
// values with them (msg.Pairs.Refs; audit.Session.CheckRef).
func (s *AuditSpec) options() (audit.Options, error) {
	opt := audit.Options{Mode: s.Mode, Probes: s.Probes, Workers: 1, NoAutoReport: true}
	if len(s.Claims) > 0 {
		p, err := claims.Parse(s.Claims)
		if err != nil {
			return opt, err
		}
		opt.Claims = p
	}
	return opt, nil
}

// preloader is what the pool worker's source does with the spans the
// dealer read for it (source.HTTP.Preload, browser.Files.Preload).
type preloader interface {
	Preload(name string, off int64, data []byte)
}

// poolWorker is a pool worker's state: its audit session, opened by
// msg.Open, checks the pairs msg.Pairs deals it.
type poolWorker struct {
	post     func(js.Value)
	sess     *audit.Session
	pre      preloader // the session's source
	spanBuf  []byte    // the memory of the current span, reused
	spanFile string
	// The span coming in pieces (msg.Piece), for the next pairs: bytes
	// [pieceOff, pieceOff+pieceGot) of pieceFile are in spanBuf so far, of
	// pieceTotal.
	pieceFile                      string
	pieceOff, pieceGot, pieceTotal int64
}

// piece copies a piece of the next span into spanBuf (the previous span
// is done with: see pairs) and hands its buffer back to the dealer. A
// piece that does not follow the ones before starts nothing: the span is
// then read by the session itself.
func (w *poolWorker) piece(m msg.Piece) {
	ok := m.Buf.Truthy() && m.Len > 0 && m.At >= 0 && m.Offset >= 0 && m.Total > 0 && m.Total <= 4*segmentBytes &&
		m.At+m.Len <= m.Total && int64(m.Buf.Get("byteLength").Int()) >= m.Len
	if ok && m.At == 0 {
		w.drop()
		if int64(cap(w.spanBuf)) < m.Total {
			w.spanBuf = make([]byte, m.Total)
		}
		w.pieceFile, w.pieceOff, w.pieceGot, w.pieceTotal = m.File, m.Offset, 0, m.Total
	}
	if ok && m.File == w.pieceFile && m.Offset == w.pieceOff && m.At == w.pieceGot && m.Total == w.pieceTotal {
		js.CopyBytesToGo(w.spanBuf[m.At:m.At+m.Len], js.Global().Get("Uint8Array").New(m.Buf, 0, m.Len))
		w.pieceGot += m.Len
	} else {
		w.pieceFile = "" // out of order: this span is not used
	}
	if m.Buf.Truthy() {
		js.Global().Call("postMessage", msg.Spent{Buf: m.Buf, File: m.File, Offset: m.Offset + m.At, Len: m.Len}.Value(), []any{m.Buf})
	}
}

// takePieces preloads the span that came in pieces just before the pairs
// m, if it came whole and is the one m says.
func (w *poolWorker) takePieces(m msg.Pairs) bool {
	ok := w.pieceFile != "" && w.pieceFile == m.File && w.pieceOff == m.Offset && w.pieceGot == m.Len && w.pieceTotal == m.Len
	if ok {
		w.spanFile = m.File
		w.pre.Preload(w.spanFile, m.Offset, w.spanBuf[:m.Len])
	}
	w.pieceFile = ""
	return ok
}

// drop ends the preloaded span (its views ended with the previous pairs).
func (w *poolWorker) drop() {
	if w.spanFile != "" && w.pre != nil {
		w.pre.Preload(w.spanFile, 0, nil)
	}
	w.spanFile = ""
}

func (w *poolWorker) fail(err string) { w.post(msg.Error{Msg: err}.Value()) }

// failErr fails with err and its class (missing, refused, unreachable…).
func (w *poolWorker) failErr(err error) {
	w.post(msg.Error{Msg: err.Error(), Class: classOf(err)}.Value())
}

// retries is how many range reads the session's source retried.
func (w *poolWorker) retries() int {
	if h, ok := w.pre.(*source.HTTP); ok {
		return int(h.Retries())
	}
	return 0
}

func (w *poolWorker) open(m msg.Open) {
	s, pre, err := openSession(m)
	if err != nil {
		w.failErr(err)
		return
	}
	if w.sess != nil {
		w.sess.Close()
	}
	w.sess, w.pre = s, pre
	w.post(msg.Opened{Kernel: s.Kernel()}.Value())
}

func (w *poolWorker) pairs(m msg.Pairs) {
	if w.sess == nil {
		w.fail("pairs before open")
		return
	}
	if m.BadRefs {
		w.fail("pairs: the extraction report's singular values do not fit the modules dealt")
		return
	}
	if m.Pieces > 0 && w.pre != nil {
		w.takePieces(m)
	}
	if m.Buf.Truthy() && w.pre != nil {
		// The dealer read this segment's span while we computed. The
		// previous span is done with (segments are checked one after the
		// other, in Serve's one goroutine: the session's views of it,
		// source.Viewer, ended with the previous call): drop it and reuse
		// its memory. This copy is the one the bytes make in this worker:
		// the checks read them in place.
		w.drop()
		n := int(m.SpanLen())
		if cap(w.spanBuf) < n {
			w.spanBuf = make([]byte, n)
		}
		data := w.spanBuf[:n]
		js.CopyBytesToGo(data, js.Global().Get("Uint8Array").New(m.Buf, 0, n))
		w.spanFile = m.File
		w.pre.Preload(w.spanFile, m.Offset, data)
		// The buffer, copied, goes back to the dealer to be filled again
		// (a fresh one costs it more than the copy).
		js.Global().Call("postMessage", msg.Spent{Buf: m.Buf, File: m.File, Offset: m.Offset, Len: int64(n)}.Value(), []any{m.Buf})
	}
	for i, mod := range m.Modules {
		var ref []float64
		if i < len(m.Refs) {
			ref = m.Refs[i]
		}
		f, err := w.sess.CheckRef(mod, ref)
		if err != nil {
			w.failErr(err)
			return
		}
		b, err := json.Marshal(f)
		if err != nil {
			w.fail(fmt.Sprintf("%s: %v", mod, err))
			return
		}
		w.post(msg.Figures{Module: mod, JSON: string(b), Retries: w.retries(), Mem: msg.Memory()}.Value())
	}
}

// openSession opens the pool worker's audit session, with the preloading
// of its source (where the dealer's read-ahead spans go).
func openSession(m msg.Open) (*audit.Session, preloader, error) {
	var spec AuditSpec
	if err := json.Unmarshal([]byte(m.Spec), &spec); err != nil {
		return nil, nil, fmt.Errorf("audit spec: %v", err)
	}
	opt, err := spec.options()
	if err != nil {
		return nil, nil, err
	}
	var fsys interface {
		fs.FS
		preloader
	}
	switch {
	case m.URL != "":
		h, err := source.NewHTTP(m.URL)
		if err != nil {
			return nil, nil, err
		}
		h.ReadAhead = readAhead
		h.Token = m.Token
		h.UseCache(poolCache()) // what the engine worker kept, read-only
		heads := make([]source.Head, len(m.Heads))
		for i, s := range m.Heads {
			heads[i] = source.Head(s)
		}
		if err := h.Seed(heads); err != nil {
			return nil, nil, err
		}
		fsys = h
	case m.Files.Truthy():
		if !m.Names.Truthy() || m.Files.Length() != m.Names.Length() {
			return nil, nil, errors.New("files and names differ in number")
		}
		f := browser.NewFiles()
		for i := 0; i < m.Files.Length(); i++ {
			f.Add(m.Files.Index(i), m.Names.Index(i).String())
		}
		fsys = f
	default:
		return nil, nil, errors.New("open: neither a URL nor files")
	}
	sess, err := audit.Open(fsys, m.Dir, opt)
	return sess, fsys, err
}
