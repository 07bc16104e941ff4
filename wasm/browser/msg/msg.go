//go:build js && wasm

package msg

import "syscall/js"

// object makes a message: op and the fields (name, value pairs); with op
// "", a plain object (a part of a message).
func object(op Op, kv ...any) js.Value {
	o := js.Global().Get("Object").New()
	if op != "" {
		o.Set("op", string(op))
	}
	for i := 1; i < len(kv); i += 2 {
		o.Set(kv[i-1].(string), kv[i])
	}
	return o
}

// str is v's field k if it is a string, else "".
func str(v js.Value, k string) string {
	if f := v.Get(k); f.Type() == js.TypeString {
		return f.String()
	}
	return ""
}

// OpOf is the op of the message v ("" if it has none).
func OpOf(v js.Value) Op { return Op(str(v, "op")) }

// idStr is the message v's id (0 if none) and its string field k.
func idStr(v js.Value, k string) (int, string) {
	id, _ := IDOf(v)
	return id, str(v, k)
}

// IDOf is the job id of the message v, if it has one.
func IDOf(v js.Value) (int, bool) {
	id := v.Get("id")
	if id.Type() != js.TypeNumber {
		return 0, false
	}
	return id.Int(), true
}

// Job asks the engine worker to run a job.
type Job struct {
	ID    int
	Spec  string   // a jobs.Spec, as JSON
	Files js.Value // an object: input key → FileList or array of File
}

func (m Job) Value() js.Value { return object(OpJob, "id", m.ID, "spec", m.Spec, "files", m.Files) }

func JobOf(v js.Value) Job {
	id, _ := IDOf(v)
	return Job{ID: id, Spec: str(v, "spec"), Files: v.Get("files")}
}

// Cancel cancels a job.
type Cancel struct{ ID int }

func (m Cancel) Value() js.Value { return object(OpCancel, "id", m.ID) }

func CancelOf(v js.Value) Cancel { id, _ := IDOf(v); return Cancel{ID: id} }

// Stacks asks the engine worker to write its goroutines' stacks to the
// console (why: what the page saw).
type Stacks struct{ Why string }

func (m Stacks) Value() js.Value { return object(OpStacks, "why", m.Why) }

func StacksOf(v js.Value) Stacks { return Stacks{Why: str(v, "why")} }

// Event is one of a job's events.
type Event struct {
	ID   int
	JSON string // a jobs.Event
}

func (m Event) Value() js.Value { return object(OpEvent, "id", m.ID, "json", m.JSON) }

func EventOf(v js.Value) Event { id, s := idStr(v, "json"); return Event{ID: id, JSON: s} }

// Done is a job's output, its last message.
type Done struct {
	ID     int
	JSON   string      // a jobs.Output, without its arrays
	Arrays [][]float64 // what jobs.TakeArrays took from it
	// BadArrays: the message had arrays that did not fit its lengths.
	BadArrays bool
}

func (m Done) Value() js.Value {
	o := object(OpDone, "id", m.ID, "json", m.JSON)
	if len(m.Arrays) > 0 {
		o.Set("arrays", floats(m.Arrays))
		lens := js.Global().Get("Array").New(len(m.Arrays))
		for i, x := range m.Arrays {
			lens.SetIndex(i, len(x))
		}
		o.Set("arrayLens", lens)
	}
	return o
}

func DoneOf(v js.Value) Done {
	id, s := idStr(v, "json")
	m := Done{ID: id, JSON: s}
	if lens := v.Get("arrayLens"); lens.Truthy() {
		if lens.Type() != js.TypeObject {
			m.BadArrays = true
			return m
		}
		m.Arrays = refsOf(v.Get("arrays"), lens, lens.Length())
		m.BadArrays = m.Arrays == nil && lens.Length() > 0
	}
	return m
}

// Fail says a job failed, its last message.
type Fail struct {
	ID  int
	Msg string
}

func (m Fail) Value() js.Value { return object(OpFail, "id", m.ID, "msg", m.Msg) }

func FailOf(v js.Value) Fail { id, s := idStr(v, "msg"); return Fail{ID: id, Msg: s} }

// Module is a pool worker's first message: Module is the dealer's
// compiled engine.wasm (public/worker.js's clefcheckModule), or undefined.
type Module struct{ Module js.Value }

func (m Module) Value() js.Value { return object(OpModule, "module", m.Module) }

// Open opens the adapter in a pool worker: from a base URL, or from Files
// (with Names, their paths) when URL is "".
type Open struct {
	Dir   string
	Spec  string // a worker.AuditSpec, as JSON
	URL   string
	Token string   // optional, with URL
	Heads []Head   // optional, with URL
	Files js.Value // an array of File
	Names js.Value // an array of string
}

// Head is what the dealer's probe of one file of the URL learnt
// (source.Head): the pool worker opens the adapter without asking the
// server again.
type Head struct {
	Name  string
	Size  int64
	ETag  string
	Bytes []byte
}

func (m Open) Value() js.Value {
	o := object(OpOpen)
	o.Set("dir", m.Dir)
	o.Set("spec", m.Spec)
	if m.URL == "" {
		o.Set("files", m.Files)
		o.Set("names", m.Names)
		return o
	}
	o.Set("url", m.URL)
	if m.Token != "" {
		o.Set("token", m.Token)
	}
	if len(m.Heads) > 0 {
		heads := js.Global().Get("Array").New(len(m.Heads))
		for i, h := range m.Heads {
			b := js.Global().Get("Uint8Array").New(len(h.Bytes))
			js.CopyBytesToJS(b, h.Bytes)
			heads.SetIndex(i, object("", "name", h.Name, "size", float64(h.Size), "etag", h.ETag, "bytes", b))
		}
		o.Set("heads", heads)
	}
	return o
}

// OpenOf reads an Open; heads that are not what Value makes (a field of
// the wrong type, a size that is not a whole number) are dropped, and the
// pool worker probes those files itself.
func OpenOf(v js.Value) Open {
	m := Open{Dir: str(v, "dir"), Spec: str(v, "spec"), URL: str(v, "url"), Token: str(v, "token"),
		Files: v.Get("files"), Names: v.Get("names")}
	heads := v.Get("heads")
	if heads.Type() != js.TypeObject || !js.Global().Get("Array").Call("isArray", heads).Bool() {
		return m
	}
	u8 := js.Global().Get("Uint8Array")
	for i := 0; i < heads.Length(); i++ {
		h := heads.Index(i)
		if h.Type() != js.TypeObject {
			continue
		}
		size, b := h.Get("size"), h.Get("bytes")
		if size.Type() != js.TypeNumber || size.Float() < 0 || size.Float() > 1<<53 || size.Float() != float64(int64(size.Float())) || !b.InstanceOf(u8) {
			continue
		}
		p := make([]byte, b.Length())
		js.CopyBytesToGo(p, b)
		m.Heads = append(m.Heads, Head{Name: str(h, "name"), Size: int64(size.Float()), ETag: str(h, "etag"), Bytes: p})
	}
	return m
}

// Pairs deals a segment of pairs to a pool worker. Buf, when truthy, is
// an ArrayBuffer whose first Len bytes (all of it when Len is 0) are bytes
// [Offset, Offset+Len) of File: post it in the transfer list.
// Refs[i], when there, is the extraction report's singular values for
// Modules[i] (audit.Job.Ref; sent as one Float64Array and their lengths).
// BadRefs: the message had references that did not fit its modules (the
// pool worker refuses the deal rather than check without them).
type Pairs struct {
	Modules []string
	Refs    [][]float64
	BadRefs bool
	Buf     js.Value
	Len     int64
	File    string
	Offset  int64
	// Pieces, without Buf: the span [Offset, Offset+Len) of File came in
	// this many Piece messages just before.
	Pieces int
}

// SpanLen is how many bytes of Buf are the span.
func (m Pairs) SpanLen() int64 {
	if m.Len > 0 {
		return m.Len
	}
	return int64(m.Buf.Get("byteLength").Int())
}

func (m Pairs) Value() js.Value {
	mods := js.Global().Get("Array").New()
	for _, s := range m.Modules {
		mods.Call("push", s)
	}
	o := object(OpPairs)
	o.Set("modules", mods)
	if len(m.Refs) > 0 {
		o.Set("refs", floats(m.Refs))
		lens := js.Global().Get("Array").New()
		for _, r := range m.Refs {
			lens.Call("push", len(r))
		}
		o.Set("refLens", lens)
	}
	if m.Buf.Truthy() || m.Pieces > 0 {
		if m.Buf.Truthy() {
			o.Set("buf", m.Buf)
		} else {
			o.Set("pieces", m.Pieces)
		}
		o.Set("file", m.File)
		o.Set("offset", float64(m.Offset))
		if m.Len > 0 {
			o.Set("len", float64(m.Len))
		}
	}
	return o
}

func PairsOf(v js.Value) Pairs {
	m := Pairs{Buf: v.Get("buf"), File: str(v, "file")}
	if mods := v.Get("modules"); mods.Truthy() {
		for i := 0; i < mods.Length(); i++ {
			m.Modules = append(m.Modules, mods.Index(i).String())
		}
	}
	if refs := v.Get("refs"); refs.Truthy() {
		m.Refs = refsOf(refs, v.Get("refLens"), len(m.Modules))
		m.BadRefs = m.Refs == nil
	}
	if off := v.Get("offset"); off.Type() == js.TypeNumber {
		m.Offset = int64(off.Float())
	}
	if n := v.Get("len"); n.Type() == js.TypeNumber {
		m.Len = int64(n.Float())
	}
	if n := v.Get("pieces"); n.Type() == js.TypeNumber && !m.Buf.Truthy() {
		m.Pieces = n.Int()
	}
	return m
}

// Piece is part of a span the dealer read for a pool worker, sent ahead of
// the Pairs that checks it (Pairs.Pieces): bytes [Offset+At, Offset+At+Len)
// of File, the first Len bytes of Buf (post it in the transfer list), of
// the span [Offset, Offset+Total). A span's pieces go in order, At from 0,
// one message each, and its Pairs right after them.
//
// A span goes in pieces of at most PieceBytes because Chromium collects
// the garbage of a worker that receives a large ArrayBuffer: one of 16 or
// 32 MiB in a message started a full collection in the receiving worker
// about every other time, pieces of 4 or 8 MiB none (two workers passing
// 88 buffers of 32 MiB back and forth, Chromium 156).
type Piece struct {
	Buf                    js.Value
	File                   string
	Offset, At, Len, Total int64
}

// PieceBytes is the most a Piece carries.
const PieceBytes = 4 << 20

func (m Piece) Value() js.Value {
	return object(OpPiece, "buf", m.Buf, "file", m.File, "offset", float64(m.Offset), "at", float64(m.At), "len", float64(m.Len), "total", float64(m.Total))
}

func PieceOf(v js.Value) Piece {
	num := func(k string) int64 {
		if n := v.Get(k); n.Type() == js.TypeNumber {
			return int64(n.Float())
		}
		return -1
	}
	return Piece{Buf: v.Get("buf"), File: str(v, "file"), Offset: num("offset"), At: num("at"), Len: num("len"), Total: num("total")}
}

// Spent hands a span's ArrayBuffer back to the dealer once the pool
// worker has copied it (post Buf in the transfer list): the dealer fills
// it again for another span.
// File, Offset and Len say which span it held (the dealer hands its
// bytes on to the file's digest: worker/feed.go).
type Spent struct {
	Buf         js.Value
	File        string
	Offset, Len int64
}

func (m Spent) Value() js.Value {
	return object(OpSpent, "buf", m.Buf, "file", m.File, "offset", float64(m.Offset), "len", float64(m.Len))
}

func SpentOf(v js.Value) Spent {
	m := Spent{Buf: v.Get("buf"), File: str(v, "file")}
	if o := v.Get("offset"); o.Type() == js.TypeNumber {
		m.Offset = int64(o.Float())
	}
	if n := v.Get("len"); n.Type() == js.TypeNumber {
		m.Len = int64(n.Float())
	}
	return m
}

// Opened says a pool worker opened the adapter.
type Opened struct{ Kernel string }

func (m Opened) Value() js.Value { return object(OpOpened, "kernel", m.Kernel) }

func OpenedOf(v js.Value) Opened { return Opened{Kernel: str(v, "kernel")} }

// Figures is one pair's figures.
type Figures struct {
	Module  string
	JSON    string // an audit.Figures
	Retries int    // the worker's range reads retried so far (source.HTTP.Retries)
	Mem     int64  // the worker's WebAssembly memory, bytes (it only grows: its peak)
}

func (m Figures) Value() js.Value {
	return object(OpFigures, "module", m.Module, "json", m.JSON, "retries", m.Retries, "mem", m.Mem)
}

func FiguresOf(v js.Value) Figures {
	f := Figures{Module: str(v, "module"), JSON: str(v, "json")}
	if r := v.Get("retries"); r.Type() == js.TypeNumber {
		f.Retries = r.Int()
	}
	if r := v.Get("mem"); r.Type() == js.TypeNumber {
		f.Mem = int64(r.Float())
	}
	return f
}

// Memory is the WebAssembly memory of the Go instance running here, in
// bytes (public/worker.js exposes it as clefcheckMem; 0 if not).
func Memory() int64 {
	m := js.Global().Get("clefcheckMem")
	if !m.Truthy() {
		return 0
	}
	return int64(m.Get("buffer").Get("byteLength").Float())
}

// Ready says a worker's Go runs.
type Ready struct{ SIMDError string }

func (m Ready) Value() js.Value { return object(OpReady, "simd_error", m.SIMDError) }

func ReadyOf(v js.Value) Ready { return Ready{SIMDError: str(v, "simd_error")} }

// Error says a worker cannot go on. Class, when set, says why in a word
// the dealer turns back into report's sentinel errors: missing, refused,
// cors, unreachable, cancelled.
type Error struct{ Msg, Class string }

func (m Error) Value() js.Value {
	if m.Class == "" {
		return object(OpError, "msg", m.Msg)
	}
	return object(OpError, "msg", m.Msg, "class", m.Class)
}

func ErrorOf(v js.Value) Error { return Error{Msg: str(v, "msg"), Class: str(v, "class")} }
