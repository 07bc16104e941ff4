package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata files")

// sample builds a small valid file: two BF16 matrices, an I64 vector and a
// zero-size tensor, with metadata.
func sample(t testing.TB) []byte {
	var b bytes.Buffer
	seq := func(n int) []byte {
		out := make([]byte, n)
		for i := range out {
			out[i] = byte(i*7 + 3)
		}
		return out
	}
	err := Encode(&b, map[string]string{"format": "pt", "note": "ünïcode"}, []Tensor{
		{Spec{"a.lora_A.weight", "BF16", []int64{2, 3}}, seq(12)},
		{Spec{"a.lora_B.weight", "BF16", []int64{4, 2}}, seq(16)},
		{Spec{"ids", "I64", []int64{3}}, seq(24)},
		{Spec{"empty", "F32", []int64{0, 5}}, nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withHeader builds a file from a raw header and a data buffer.
func withHeader(hdr string, data int) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(hdr)))
	b.WriteString(hdr)
	b.Write(make([]byte, data))
	return b.Bytes()
}

func open(t testing.TB, data []byte) (*Reader, error) {
	t.Helper()
	return NewReader(bytes.NewReader(data), int64(len(data)), "test.safetensors")
}

// sentinels are the errors every failure of the reader wraps (a file that
// cannot be opened wraps the file system's error instead).
var sentinels = []error{ErrHeader, ErrLayout, ErrTruncated, ErrNoTensor}

// wrapsSentinel reports whether err is an *Error or Errors of this package
// wrapping one of the sentinels.
func wrapsSentinel(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func TestTestdata(t *testing.T) {
	dir := filepath.Join("testdata", "valid")
	if *update {
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "sample.safetensors"), sample(t), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "empty.safetensors"), withHeader("{}      ", 0), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if len(files) < 2 {
		t.Fatalf("testdata missing: %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := open(t, data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestReadSample(t *testing.T) {
	data := sample(t)
	r, err := open(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.Tensors); got != 4 {
		t.Fatalf("tensors = %d, want 4", got)
	}
	if r.Metadata["note"] != "ünïcode" || r.Metadata["format"] != "pt" {
		t.Errorf("metadata = %v", r.Metadata)
	}
	if r.HeaderSize%8 != 0 {
		t.Errorf("header size %d not padded to 8", r.HeaderSize)
	}
	ti, ok := r.Tensor("a.lora_B.weight")
	if !ok || ti.DType != "BF16" || fmt.Sprint(ti.Shape) != "[4 2]" || ti.Bytes() != 16 || ti.Len() != 8 {
		t.Fatalf("tensor = %+v", ti)
	}
	buf, err := r.ReadTensor("a.lora_B.weight", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, data[ti.Offset:ti.Offset+16]) || buf[0] != 3 {
		t.Errorf("bytes = %v", buf)
	}
	part, err := r.ReadRange(ti, 4, 8, buf)
	if err != nil || !bytes.Equal(part, data[ti.Offset+4:ti.Offset+8]) {
		t.Errorf("range = %v %v", part, err)
	}
	if _, err := r.ReadRange(ti, 4, 17, nil); err == nil {
		t.Error("range beyond the tensor accepted")
	}
	if _, err := r.ReadTensor("nope", nil); !errors.Is(err, ErrNoTensor) {
		t.Errorf("missing tensor: %v", err)
	}
}

// messWith returns a copy of the sample with its header rewritten by f.
func messWith(f func(h string) string) func(t testing.TB) []byte {
	return func(t testing.TB) []byte {
		data := sample(t)
		n := binary.LittleEndian.Uint64(data)
		h := f(string(data[8 : 8+n]))
		return append(withHeader(h, 0)[:8+len(h)], data[8+n:]...)
	}
}

func raw(h string, data int) func(testing.TB) []byte {
	return func(testing.TB) []byte { return withHeader(h, data) }
}

func TestReject(t *testing.T) {
	cases := []struct {
		name   string
		source func(testing.TB) []byte
		want   error  // the sentinel the error must wrap
		msg    string // a fragment the message must contain
	}{
		{"short file", func(testing.TB) []byte { return []byte{1, 2, 3} }, ErrTruncated, "shorter than"},
		{"huge header length", func(testing.TB) []byte {
			b := make([]byte, 16)
			binary.LittleEndian.PutUint64(b, 1<<40)
			return b
		}, ErrHeader, "header length field exceeds the file size (16 bytes)"},
		{"header past EOF", func(testing.TB) []byte {
			b := make([]byte, 16)
			binary.LittleEndian.PutUint64(b, 100)
			return b
		}, ErrHeader, "exceeds the file size (16 bytes)"},
		{"not json", raw("hello!!!", 0), ErrHeader, "does not start with"},
		{"array", raw("[]", 0), ErrHeader, "does not start with"},
		{"bad utf8", raw("{\"\xff\":1}", 0), ErrHeader, "UTF-8"},
		{"truncated json", raw(`{"a":{"dtype":"F32"`, 0), ErrHeader, "JSON"},
		{"trailing json", raw(`{} {}`, 0), ErrHeader, "trailing data"},
		{"duplicate name", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), ErrHeader, `duplicate tensor name "a"`},
		{"duplicate metadata", raw(`{"__metadata__":{},"__metadata__":{}}`, 0), ErrHeader, "duplicate"},
		{"metadata not string", raw(`{"__metadata__":{"k":1}}`, 0), ErrHeader, "expected a string"},
		{"metadata duplicate key", raw(`{"__metadata__":{"k":"a","k":"b"}}`, 0), ErrHeader, "duplicate key"},
		{"unknown dtype", raw(`{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,1]}}`, 1), ErrHeader, "unknown dtype"},
		{"missing shape", raw(`{"a":{"dtype":"U8","data_offsets":[0,1]}}`, 1), ErrHeader, "missing shape"},
		{"missing dtype", raw(`{"a":{"shape":[1],"data_offsets":[0,1]}}`, 1), ErrHeader, "missing dtype"},
		{"missing offsets", raw(`{"a":{"dtype":"U8","shape":[1]}}`, 1), ErrHeader, "missing data_offsets"},
		{"extra field", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}`, 1), ErrHeader, "unknown field"},
		{"duplicate field", raw(`{"a":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1), ErrHeader, "duplicate field"},
		{"negative dim", raw(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}`, 1), ErrHeader, "not a non-negative integer"},
		{"fractional dim", raw(`{"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}}`, 1), ErrHeader, "not a non-negative integer"},
		{"exponent offset", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1e0]}}`, 1), ErrHeader, "not a non-negative integer"},
		{"string dim", raw(`{"a":{"dtype":"U8","shape":["1"],"data_offsets":[0,1]}}`, 1), ErrHeader, "expected a non-negative integer"},
		{"three offsets", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, 1), ErrHeader, "3 entries"},
		{"huge dim", raw(`{"a":{"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,1]}}`, 1), ErrHeader, "out of range"},
		{"shape overflow", raw(`{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,1]}}`, 1), ErrHeader, "overflows"},
		{"size mismatch", raw(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), ErrHeader, "needs 8 bytes"},
		{"end before begin", raw(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}}`, 4), ErrHeader, "end before"},
		{"sub-byte", raw(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}`, 1), ErrHeader, "whole number of bytes"},
		{"gap at start", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, 2), ErrLayout, "gap of 1 bytes at the start"},
		{"gap between", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, 3), ErrLayout, "gap of 1 bytes between a"},
		{"overlap", raw(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, 3), ErrLayout, "overlaps a"},
		{"trailing bytes", raw(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 5), ErrLayout, "4 trailing bytes"},
		{"out of bounds", raw(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, 3), ErrLayout, "beyond the 3-byte data buffer"},
		{"sample: renamed to duplicate", messWith(func(h string) string { return strings.Replace(h, "a.lora_B.weight", "a.lora_A.weight", 1) }), ErrHeader, "duplicate tensor name"},
		{"sample: metadata number", messWith(func(h string) string { return strings.Replace(h, `"pt"`, `42  `, 1) }), ErrHeader, "expected a string"},
		{"sample: truncated data", func(t testing.TB) []byte { d := sample(t); return d[:len(d)-1] }, ErrLayout, "beyond"},
		{"sample: appended byte", func(t testing.TB) []byte { return append(sample(t), 0) }, ErrLayout, "1 trailing bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := open(t, c.source(t))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, c.want) || !wrapsSentinel(err) {
				t.Fatalf("error %v does not wrap %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("message %q lacks %q", err.Error(), c.msg)
			}
		})
	}
}

// meaning is what a parsed file says, independent of formatting.
func meaning(r *Reader) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v|", r.Metadata)
	for _, t := range r.Tensors {
		fmt.Fprintf(&b, "%s %s %v %d %d|", t.Name, t.DType, t.Shape, t.Begin, t.End)
	}
	return b.String()
}

// independent parses a header with encoding/json, to check the reader's
// reading of an accepted mutant against a second opinion.
func independent(t *testing.T, data []byte) string {
	n := binary.LittleEndian.Uint64(data)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data[8:8+n], &m); err != nil {
		t.Fatalf("reader accepted a header encoding/json rejects: %v", err)
	}
	return fmt.Sprint(len(m))
}

// TestMutations corrupts the sample at every header byte and at every offset
// boundary: each mutant is either read with the same meaning, read as a
// different but fully consistent file, or rejected with a sentinel error — never a
// panic, never more memory than the file.
func TestMutations(t *testing.T) {
	orig := sample(t)
	base, err := open(t, orig)
	if err != nil {
		t.Fatal(err)
	}
	want := meaning(base)
	n := int(binary.LittleEndian.Uint64(orig))
	values := []byte{0, ' ', '\t', '"', '{', '}', '[', ']', ',', ':', '0', '1', '9', '-', '.', 'e', 'A', 0x80, 0xff}
	check := func(label string, mutant []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r, err := open(t, mutant)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(len(mutant))*64+64<<10 {
			t.Errorf("%s: allocated %d bytes for a %d-byte file", label, grew, len(mutant))
		}
		if err != nil {
			if !wrapsSentinel(err) {
				t.Errorf("%s: error without a sentinel: %v", label, err)
			}
			return
		}
		if meaning(r) == want {
			return
		}
		// Accepted with another meaning: it must still be a consistent file.
		independent(t, mutant)
		var pos int64
		for _, ti := range r.Tensors {
			if ti.Begin != pos || ti.Bytes() != ti.Len()*int64(dtypeBits[ti.DType]/8) {
				t.Errorf("%s: accepted an inconsistent layout: %s", label, meaning(r))
			}
			pos = ti.End
		}
		if pos != r.DataSize() {
			t.Errorf("%s: accepted a file whose tensors cover %d of %d bytes", label, pos, r.DataSize())
		}
	}
	mutants := 0
	for i := 0; i < 8+n; i++ {
		for _, v := range values {
			if orig[i] == v {
				continue
			}
			m := bytes.Clone(orig)
			m[i] = v
			check(fmt.Sprintf("byte %d=%q", i, v), m)
			mutants++
		}
	}
	// Offset boundaries: shift every number in the header by ±1, cut the
	// file at every tensor boundary, change the length prefix.
	hdr := string(orig[8 : 8+n])
	for i := 0; i < len(hdr); i++ {
		if hdr[i] < '0' || hdr[i] > '9' || (i > 0 && hdr[i-1] >= '0' && hdr[i-1] <= '9') {
			continue
		}
		j := i
		for j < len(hdr) && hdr[j] >= '0' && hdr[j] <= '9' {
			j++
		}
		var v int
		fmt.Sscan(hdr[i:j], &v)
		for _, d := range []int{-1, 1, 1000} {
			h := hdr[:i] + fmt.Sprint(v+d) + hdr[j:]
			check(fmt.Sprintf("number at %d %+d", i, d), append(withHeader(h, 0)[:8+len(h)], orig[8+n:]...))
			mutants++
		}
	}
	for _, ti := range base.Tensors {
		for _, cut := range []int64{ti.Offset, ti.Offset + 1, ti.Offset + ti.Bytes() - 1} {
			if cut > 0 && cut < int64(len(orig)) {
				check(fmt.Sprintf("cut at %d", cut), orig[:cut])
				mutants++
			}
		}
	}
	for _, d := range []int64{-8, -1, 1, 8, 1 << 32} {
		m := bytes.Clone(orig)
		binary.LittleEndian.PutUint64(m, uint64(int64(n)+d))
		check(fmt.Sprintf("length %+d", d), m)
		mutants++
	}
	t.Logf("%d mutants", mutants)
}

func FuzzHeader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.safetensors"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add(sample(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data), int64(len(data)), "fuzz")
		if err != nil {
			if !wrapsSentinel(err) {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		var pos int64
		for _, ti := range r.Tensors {
			if ti.Begin != pos {
				t.Fatalf("accepted a gap or overlap at %s", ti.Name)
			}
			pos = ti.End
			if _, err := r.ReadTensor(ti.Name, nil); err != nil {
				t.Fatalf("accepted tensor %s cannot be read: %v", ti.Name, err)
			}
		}
		if pos != r.DataSize() {
			t.Fatalf("accepted a buffer covered to %d of %d", pos, r.DataSize())
		}
	})
}

// countingAt counts an io.ReaderAt's reads and the bytes they ask for.
type countingAt struct {
	r            io.ReaderAt
	reads, bytes int
}

func (c *countingAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	c.bytes += len(p)
	return c.r.ReadAt(p, off)
}

// TestHeaderReads: a header is read in pieces of up to headerRead bytes,
// not in the JSON decoder's own small reads (each a round trip to a picked
// File in a browser), and never beyond it into the data.
func TestHeaderReads(t *testing.T) {
	for _, tensors := range []int{1, 372, 2000} {
		var specs []Spec
		for i := range tensors {
			specs = append(specs, Spec{fmt.Sprintf("base_model.model.layers.%d.mlp.down_proj.lora_A.weight", i), "BF16", []int64{2, 2}})
		}
		var b bytes.Buffer
		if err := WriteHeader(&b, map[string]string{"format": "pt"}, specs); err != nil {
			t.Fatal(err)
		}
		b.Write(make([]byte, 8*tensors))
		c := &countingAt{r: bytes.NewReader(b.Bytes())}
		r, err := NewReader(c, int64(b.Len()), "many.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Tensors) != tensors {
			t.Fatalf("%d tensors read, want %d", len(r.Tensors), tensors)
		}
		// The length field, then the header in pieces of headerRead.
		want := 1 + int((r.HeaderSize+headerRead-1)/headerRead)
		if c.reads > want {
			t.Errorf("%d tensors (a %d-byte header): %d reads, want at most %d", tensors, r.HeaderSize, c.reads, want)
		}
		if int64(c.bytes) > 8+r.HeaderSize {
			t.Errorf("%d tensors: %d bytes asked for, more than the %d of the length and the header", tensors, c.bytes, 8+r.HeaderSize)
		}
	}
}
