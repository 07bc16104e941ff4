package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sort"
	"strconv"

	"github.com/kvit-s/clefcheck/wasm/source"
)

// MaxHeaderSize is the largest header accepted, as in the reference
// implementation (100,000,000 bytes). It is checked before any allocation.
const MaxHeaderSize = 100_000_000

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name  string
	DType string
	Shape []int64
	// Begin and End are offsets in the data buffer; Offset is Begin from the
	// start of the file.
	Begin, End int64
	Offset     int64
}

// Len is the number of elements.
func (t TensorInfo) Len() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes is the tensor's byte length.
func (t TensorInfo) Bytes() int64 { return t.End - t.Begin }

// headerRead is the most of the header one read asks for.
const headerRead = 64 << 10

// Reader reads a safetensors file through an io.ReaderAt.
type Reader struct {
	r          io.ReaderAt
	size       int64
	Name       string            // for messages; set by Open or by the caller
	HeaderSize int64             // N, the JSON header's length
	DataStart  int64             // 8 + N
	Metadata   map[string]string // __metadata__, nil when absent
	Tensors    []TensorInfo      // in the order of their offsets
	byName     map[string]int
}

// NewReader parses and validates the header of the safetensors file r of the
// given size. name is used in messages. It reads only the header.
func NewReader(r io.ReaderAt, size int64, name string) (*Reader, error) {
	if size < 8 {
		return nil, errorf(ErrTruncated, name, "file is %d bytes, shorter than the 8-byte header length", size)
	}
	var lenbuf [8]byte
	if got, err := r.ReadAt(lenbuf[:], 0); err != nil && !(got == 8 && err == io.EOF) {
		return nil, errorfCause(ErrTruncated, err, name, "reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lenbuf[:])
	// The length field is untrusted bytes: a file that is not safetensors
	// (a symlink to a text file) reads as a huge number that would quote
	// the text back. Say what is wrong without it.
	if n > uint64(size-8) {
		return nil, errorf(ErrHeader, name, "the header length field exceeds the file size (%d bytes): not a safetensors file, or a truncated one", size)
	}
	if n > MaxHeaderSize {
		return nil, errorf(ErrHeader, name, "header length %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if n < 2 {
		return nil, errorf(ErrHeader, name, "header length %d is too short for a JSON object", n)
	}
	st := &Reader{r: r, size: size, Name: name, HeaderSize: int64(n), DataStart: 8 + int64(n)}
	// The header is streamed through the decoder, never held whole, in
	// reads of up to headerRead bytes: the decoder's own reads are about
	// 1.5 KB each, one round trip apiece to a picked File (a few ms in a
	// browser) — the twin's 58 KB header took 38 of them.
	hs := &countingReader{r: bufio.NewReaderSize(io.NewSectionReader(r, 8, int64(n)), int(min(n, headerRead)))}
	if err := st.parseHeader(hs); err != nil {
		if hs.err != nil {
			return nil, errorfCause(ErrTruncated, hs.err, name, "reading the %d-byte header: %v", n, hs.err)
		}
		var e *Error
		if errors.As(err, &e) {
			if e.Subject == "" {
				e.Subject = name
			}
			return nil, e
		}
		return nil, errorf(ErrHeader, name, "%v", err)
	}
	if hs.n != int64(n) {
		return nil, errorf(ErrTruncated, name, "the header ends after %d of its %d bytes", hs.n, n)
	}
	if errs := st.checkLayout(); len(errs) > 0 {
		return nil, errs
	}
	return st, nil
}

// Size is the file's size.
func (st *Reader) Size() int64 { return st.size }

// DataSize is the size of the data buffer.
func (st *Reader) DataSize() int64 { return st.size - st.DataStart }

// Tensor returns the tensor called name.
func (st *Reader) Tensor(name string) (TensorInfo, bool) {
	i, ok := st.byName[name]
	if !ok {
		return TensorInfo{}, false
	}
	return st.Tensors[i], true
}

// ReadTensor reads the raw bytes of the tensor called name into buf, growing
// it if it is too small, and returns the filled slice.
func (st *Reader) ReadTensor(name string, buf []byte) ([]byte, error) {
	t, ok := st.Tensor(name)
	if !ok {
		return buf[:0], errorf(ErrNoTensor, name, "no such tensor in %s", st.Name)
	}
	return st.ReadRange(t, 0, t.Bytes(), buf)
}

// ReadRange reads bytes [from, to) of tensor t into buf (grown if needed).
func (st *Reader) ReadRange(t TensorInfo, from, to int64, buf []byte) ([]byte, error) {
	if from < 0 || to < from || to > t.Bytes() {
		return buf[:0], fmt.Errorf("safetensors: range [%d, %d) outside tensor %s of %d bytes", from, to, t.Name, t.Bytes())
	}
	n := int(to - from)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if n == 0 {
		return buf, nil
	}
	if got, err := st.r.ReadAt(buf, t.Offset+from); err != nil && !(got == n && err == io.EOF) {
		return buf[:0], errorfCause(ErrTruncated, err, t.Name, "reading bytes %d–%d of %s: %v", t.Offset+from, t.Offset+to, st.Name, err)
	}
	return buf, nil
}

// View is bytes [from, to) of tensor t without a copy, when the file's
// reader holds them in memory (source.Viewer): only to be read, and only
// while the source holds them (until a RangeFS's span is replaced). ok is
// false when they must be read (ReadRange).
func (st *Reader) View(t TensorInfo, from, to int64) (b []byte, ok bool) {
	if from < 0 || to < from || to > t.Bytes() {
		return nil, false
	}
	v, is := st.r.(source.Viewer)
	if !is {
		return nil, false
	}
	return v.View(t.Offset+from, int(to-from))
}

// Section returns a reader over the tensor's bytes, for chunked streaming.
func (st *Reader) Section(t TensorInfo) *io.SectionReader {
	return io.NewSectionReader(st.r, t.Offset, t.Bytes())
}

// ---- header parsing at the token level ----

type tokens struct {
	dec *json.Decoder
	js  *jsonStream // the stream under dec: its own errors come first
}

func (p *tokens) next() (json.Token, error) {
	t, err := p.dec.Token()
	if p.js != nil && p.js.err != nil {
		return nil, p.js.err
	}
	if err == io.EOF {
		return nil, errors.New("unexpected end of JSON")
	}
	if err != nil {
		if p.js == nil {
			return nil, fmt.Errorf("invalid JSON: %v", err)
		}
		return nil, fmt.Errorf("invalid JSON (within the first %d bytes): %v", p.js.consumed, err)
	}
	return t, nil
}

// countingReader counts the bytes read and keeps a read error other than
// io.EOF (a file that cannot be read is not a malformed one).
type countingReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if err != nil && err != io.EOF {
		c.err = err
	}
	return n, err
}

func (p *tokens) delim(want json.Delim, what string) error {
	t, err := p.next()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("%s: expected %q, found %s", what, string(want), describe(t))
	}
	return nil
}

func (p *tokens) str(what string) (string, error) {
	t, err := p.next()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("%s: expected a string, found %s", what, describe(t))
	}
	return s, nil
}

// uint reads a non-negative integer written without sign, fraction or exponent.
func (p *tokens) uint(what string) (uint64, error) {
	t, err := p.next()
	if err != nil {
		return 0, err
	}
	num, ok := t.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: expected a non-negative integer, found %s", what, describe(t))
	}
	s := string(num)
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%s: %s is not a non-negative integer", what, s)
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %s is out of range", what, s)
	}
	return v, nil
}

// uints reads an array of non-negative integers.
func (p *tokens) uints(what string, max int) ([]uint64, error) {
	if err := p.delim('[', what); err != nil {
		return nil, err
	}
	var out []uint64
	for p.dec.More() {
		if len(out) == max {
			return nil, fmt.Errorf("%s: more than %d entries", what, max)
		}
		v, err := p.uint(what)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := p.delim(']', what); err != nil {
		return nil, err
	}
	return out, nil
}

func describe(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		return strconv.Quote(string(v))
	case string:
		return "string " + truncate(strconv.Quote(v), 60)
	case json.Number:
		return "number " + truncate(string(v), 40)
	case bool:
		return fmt.Sprintf("%v", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", t)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// maxDims bounds a shape's rank; the format has no limit but no real tensor
// comes near it, and it bounds the work of a hostile header.
const maxDims = 64

func (st *Reader) parseHeader(hdr io.Reader) error {
	js := newJSONStream(hdr, true)
	dec := json.NewDecoder(js)
	dec.UseNumber()
	p := &tokens{dec: dec, js: js}
	if err := p.delim('{', "header"); err != nil {
		return err
	}
	st.byName = map[string]int{}
	seenMeta := false
	for dec.More() {
		name, err := p.str("tensor name")
		if err != nil {
			return err
		}
		if name == "__metadata__" {
			if seenMeta {
				return errors.New(`duplicate "__metadata__"`)
			}
			seenMeta = true
			if st.Metadata, err = parseMetadata(p); err != nil {
				return err
			}
			continue
		}
		if _, dup := st.byName[name]; dup {
			return fmt.Errorf("duplicate tensor name %s", truncate(strconv.Quote(name), 120))
		}
		if len(st.Tensors) == MaxTensors {
			return limitf("", "the header lists more than %d tensors (MaxTensors)", MaxTensors)
		}
		if len(name) > MaxNameLen {
			return limitf("", "tensor name %s is %d bytes, longer than %d (MaxNameLen)", truncate(strconv.Quote(name), 60), len(name), MaxNameLen)
		}
		t, err := parseTensor(p, name)
		if err != nil {
			return err
		}
		t.Offset = st.DataStart + t.Begin
		st.byName[name] = len(st.Tensors)
		st.Tensors = append(st.Tensors, t)
	}
	if err := p.delim('}', "header"); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		if js.err != nil {
			return js.err
		}
		return errors.New("trailing data after the header object")
	}
	return nil
}

func parseMetadata(p *tokens) (map[string]string, error) {
	if err := p.delim('{', "__metadata__"); err != nil {
		return nil, err
	}
	m := map[string]string{}
	for p.dec.More() {
		k, err := p.str("__metadata__ key")
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("__metadata__: duplicate key %s", truncate(strconv.Quote(k), 80))
		}
		v, err := p.str("__metadata__ value of " + truncate(strconv.Quote(k), 80))
		if err != nil {
			return nil, err
		}
		m[k] = v
	}
	return m, p.delim('}', "__metadata__")
}

func parseTensor(p *tokens, name string) (TensorInfo, error) {
	t := TensorInfo{Name: name}
	q := truncate(strconv.Quote(name), 120)
	if err := p.delim('{', "tensor "+q); err != nil {
		return t, err
	}
	var haveDtype, haveShape, haveOffsets bool
	var shape, offs []uint64
	for p.dec.More() {
		field, err := p.str("tensor " + q + " field")
		if err != nil {
			return t, err
		}
		switch field {
		case "dtype":
			if haveDtype {
				return t, fmt.Errorf("tensor %s: duplicate field dtype", q)
			}
			haveDtype = true
			if t.DType, err = p.str("tensor " + q + " dtype"); err != nil {
				return t, err
			}
			if _, ok := dtypeBits[t.DType]; !ok {
				return t, fmt.Errorf("tensor %s: unknown dtype %s", q, truncate(strconv.Quote(t.DType), 40))
			}
		case "shape":
			if haveShape {
				return t, fmt.Errorf("tensor %s: duplicate field shape", q)
			}
			haveShape = true
			if shape, err = p.uints("tensor "+q+" shape", maxDims); err != nil {
				return t, err
			}
		case "data_offsets":
			if haveOffsets {
				return t, fmt.Errorf("tensor %s: duplicate field data_offsets", q)
			}
			haveOffsets = true
			if offs, err = p.uints("tensor "+q+" data_offsets", 3); err != nil {
				return t, err
			}
			if len(offs) != 2 {
				return t, fmt.Errorf("tensor %s: data_offsets has %d entries, want 2", q, len(offs))
			}
		default:
			return t, fmt.Errorf("tensor %s: unknown field %s", q, truncate(strconv.Quote(field), 40))
		}
	}
	if err := p.delim('}', "tensor "+q); err != nil {
		return t, err
	}
	switch {
	case !haveDtype:
		return t, fmt.Errorf("tensor %s: missing dtype", q)
	case !haveShape:
		return t, fmt.Errorf("tensor %s: missing shape", q)
	case !haveOffsets:
		return t, fmt.Errorf("tensor %s: missing data_offsets", q)
	}
	// Element count and byte length, with overflow checks.
	n := uint64(1)
	for _, d := range shape {
		hi, lo := bits.Mul64(n, d)
		if hi != 0 || lo > 1<<62 {
			return t, fmt.Errorf("tensor %s: shape %v overflows", q, shape)
		}
		n = lo
	}
	hi, nbits := bits.Mul64(n, dtypeBits[t.DType])
	if hi != 0 || nbits > 1<<62 {
		return t, fmt.Errorf("tensor %s: shape %v overflows", q, shape)
	}
	if nbits%8 != 0 {
		return t, fmt.Errorf("tensor %s: %d elements of %s are not a whole number of bytes", q, n, t.DType)
	}
	begin, end := offs[0], offs[1]
	if end < begin {
		return t, fmt.Errorf("tensor %s: data_offsets [%d, %d] end before they begin", q, begin, end)
	}
	if end > 1<<62 {
		return t, fmt.Errorf("tensor %s: data_offsets [%d, %d] out of range", q, begin, end)
	}
	if end-begin != nbits/8 {
		return t, fmt.Errorf("tensor %s: %s %v needs %d bytes but data_offsets [%d, %d] hold %d",
			q, t.DType, shape, nbits/8, begin, end, end-begin)
	}
	t.Shape = make([]int64, len(shape))
	for i, d := range shape {
		t.Shape[i] = int64(d)
	}
	t.Begin, t.End = int64(begin), int64(end)
	return t, nil
}

// checkLayout verifies that the tensors tile the data buffer exactly: from 0,
// no gap, no overlap, ending at the end of the file.
func (st *Reader) checkLayout() Errors {
	var errs Errors
	bad := func(subject, format string, a ...any) {
		errs = append(errs, errorf(ErrLayout, subject, format, a...))
	}
	sort.SliceStable(st.Tensors, func(i, j int) bool {
		a, b := st.Tensors[i], st.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.End < b.End
	})
	for i, t := range st.Tensors {
		st.byName[t.Name] = i
	}
	data := st.DataSize()
	pos, prev := int64(0), ""
	for _, t := range st.Tensors {
		switch {
		case t.Begin > pos:
			if prev == "" {
				bad(t.Name, "gap of %d bytes at the start of the data buffer: the first tensor begins at %d", t.Begin-pos, t.Begin)
			} else {
				bad(t.Name, "gap of %d bytes between %s (ends at %d) and %s (begins at %d)", t.Begin-pos, prev, pos, t.Name, t.Begin)
			}
		case t.Begin < pos:
			bad(t.Name, "%s [%d, %d) overlaps %s, which ends at %d", t.Name, t.Begin, t.End, prev, pos)
		}
		if t.End > data {
			bad(t.Name, "%s [%d, %d) lies beyond the %d-byte data buffer", t.Name, t.Begin, t.End, data)
		}
		if t.End >= pos {
			pos, prev = t.End, t.Name
		}
	}
	if pos < data {
		bad(st.Name, "%d trailing bytes after the last tensor (data buffer %d bytes, tensors cover %d)", data-pos, data, pos)
	}
	return capErrors(errs, st.Name)
}
