package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Spec names a tensor to write.
type Spec struct {
	Name  string
	DType string
	Shape []int64
}

// Bytes is the byte length of the tensor the spec describes.
func (s Spec) Bytes() int64 {
	n := int64(1)
	for _, d := range s.Shape {
		n *= d
	}
	return n * int64(dtypeBits[s.DType]) / 8
}

// WriteHeader writes the length and the header for tensors laid out in the
// order given; the caller then writes each tensor's bytes in that order. The
// header is padded with spaces to a multiple of 8 bytes, as the reference
// implementation does.
func WriteHeader(w io.Writer, meta map[string]string, specs []Spec) error {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	comma := func() {
		if !first {
			b.WriteByte(',')
		}
		first = false
	}
	if len(meta) > 0 {
		keys := make([]string, 0, len(meta))
		for k := range meta {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		comma()
		b.WriteString(`"__metadata__":{`)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kj, _ := json.Marshal(k)
			vj, _ := json.Marshal(meta[k])
			b.Write(kj)
			b.WriteByte(':')
			b.Write(vj)
		}
		b.WriteByte('}')
	}
	off := int64(0)
	for _, s := range specs {
		if _, ok := dtypeBits[s.DType]; !ok {
			return fmt.Errorf("safetensors: unknown dtype %q for %s", s.DType, s.Name)
		}
		comma()
		nj, _ := json.Marshal(s.Name)
		shape := s.Shape
		if shape == nil {
			shape = []int64{}
		}
		sj, _ := json.Marshal(shape)
		n := s.Bytes()
		fmt.Fprintf(&b, `%s:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, nj, s.DType, sj, off, off+n)
		off += n
	}
	b.WriteByte('}')
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	var lenbuf [8]byte
	binary.LittleEndian.PutUint64(lenbuf[:], uint64(b.Len()))
	if _, err := w.Write(lenbuf[:]); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Tensor is a tensor held in memory, for Encode.
type Tensor struct {
	Spec
	Data []byte
}

// Encode writes a whole file from tensors held in memory.
func Encode(w io.Writer, meta map[string]string, ts []Tensor) error {
	specs := make([]Spec, len(ts))
	for i, t := range ts {
		if int64(len(t.Data)) != t.Spec.Bytes() {
			return fmt.Errorf("safetensors: %s has %d bytes, its shape needs %d", t.Name, len(t.Data), t.Spec.Bytes())
		}
		specs[i] = t.Spec
	}
	if err := WriteHeader(w, meta, specs); err != nil {
		return err
	}
	for _, t := range ts {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}
