package refs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// HiddenFormat is the metadata format of hidden-state files.
const HiddenFormat = "clef-hidden/1"

// Record is report.Record.
type Record = report.Record

// Answer is report.Answer.
type Answer = report.Answer

// FileName is a record's hidden-state file name.
func FileName(id string) string { return strings.ReplaceAll(id, "/", "__") + ".safetensors" }

// MaxLine bounds one JSONL line.
const MaxLine = 16 << 20

// ReadJSONL decodes every line of r into a new T with strict JSON (unknown
// fields allowed; blank lines skipped), calling fn for each.
func ReadJSONL[T any](r io.Reader, name string, fn func(line int, v *T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var v T
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
		if dec.More() {
			return fmt.Errorf("%s:%d: trailing data", name, n)
		}
		if err := fn(n, &v); err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// ReadAnswers reads every *.jsonl in dir of fsys, keyed by id.
func ReadAnswers(fsys fs.FS, dir string) (map[string]*Answer, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, &report.Error{Code: report.FileUnreadable, Subject: dir, Msg: err.Error()}
	}
	out := map[string]*Answer{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		name := path.Join(dir, e.Name())
		data, err := source.ReadSmall(fsys, name, 256<<20)
		if err != nil {
			return nil, err
		}
		err = ReadJSONL(bytes.NewReader(data), name, func(line int, a *Answer) error {
			if err := a.Check(); err != nil {
				return err
			}
			if _, dup := out[a.ID]; dup {
				return fmt.Errorf("id %s appears twice", a.ID)
			}
			out[a.ID] = a
			return nil
		})
		if err != nil {
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error()}
		}
	}
	return out, nil
}

// WriteAnswers writes answers as JSONL, sorted by id.
func WriteAnswers(w io.Writer, as []*Answer) error {
	sort.Slice(as, func(i, j int) bool { return as[i].ID < as[j].ID })
	enc := json.NewEncoder(w)
	for _, a := range as {
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return nil
}

// Hidden is one record's captured hidden states.
type Hidden struct {
	ID       string
	Layers   []int
	InputIDs []int64
	Shape    []int     // [L, T, H] or [L, H]
	Data     []float32 // row-major
}

// T is the number of captured positions (1 when only the last token was kept).
func (h *Hidden) T() int {
	if len(h.Shape) == 3 {
		return h.Shape[1]
	}
	return 1
}

// H is the hidden size.
func (h *Hidden) H() int { return h.Shape[len(h.Shape)-1] }

// Layer returns the states of captured layer index l (T × H).
func (h *Hidden) Layer(l int) []float32 {
	n := h.T() * h.H()
	return h.Data[l*n : (l+1)*n]
}

// Last returns the last position's state of captured layer index l.
func (h *Hidden) Last(l int) []float32 {
	x := h.Layer(l)
	return x[len(x)-h.H():]
}

// Encode writes a hidden-state file; dt is "F32" or "BF16".
func (h *Hidden) Encode(w io.Writer, dt string) error {
	ls := make([]string, len(h.Layers))
	for i, l := range h.Layers {
		ls[i] = strconv.Itoa(l)
	}
	ids := make([]byte, 0, 8*len(h.InputIDs))
	for _, id := range h.InputIDs {
		ids = append(ids, byte(id), byte(id>>8), byte(id>>16), byte(id>>24), byte(id>>32), byte(id>>40), byte(id>>48), byte(id>>56))
	}
	shape := make([]int64, len(h.Shape))
	for i, d := range h.Shape {
		shape[i] = int64(d)
	}
	var data []byte
	if dt == "BF16" {
		data = dtype.EncodeBF16(nil, h.Data)
	} else {
		dt, data = "F32", dtype.EncodeF32(nil, h.Data)
	}
	return safetensors.Encode(w, map[string]string{"format": HiddenFormat, "id": h.ID, "layers": strings.Join(ls, ",")}, []safetensors.Tensor{
		{Spec: safetensors.Spec{Name: "hidden_states", DType: dt, Shape: shape}, Data: data},
		{Spec: safetensors.Spec{Name: "input_ids", DType: "I64", Shape: []int64{int64(len(h.InputIDs))}}, Data: ids},
	})
}

// MaxHiddenBytes bounds a hidden-state file read whole.
const MaxHiddenBytes = 1 << 30

// ReadHidden reads and validates a hidden-state file.
func ReadHidden(fsys fs.FS, name string) (*Hidden, error) {
	f, err := source.Open(fsys, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := safetensors.NewReader(f, f.Size, name)
	if err != nil {
		return nil, err
	}
	bad := func(format string, a ...any) error {
		return &report.Error{Code: report.HeaderInvalid, Subject: name, Msg: fmt.Sprintf(format, a...)}
	}
	if r.Metadata["format"] != HiddenFormat {
		return nil, bad("metadata format is %q, want %q", r.Metadata["format"], HiddenFormat)
	}
	h := &Hidden{ID: r.Metadata["id"]}
	if h.ID == "" {
		return nil, bad("metadata has no id")
	}
	for _, s := range strings.Split(r.Metadata["layers"], ",") {
		l, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, bad("metadata layers %q is not a list of layer numbers", r.Metadata["layers"])
		}
		h.Layers = append(h.Layers, l)
	}
	hs, ok := r.Tensor("hidden_states")
	if !ok {
		return nil, bad("no hidden_states tensor")
	}
	ii, ok := r.Tensor("input_ids")
	if !ok {
		return nil, bad("no input_ids tensor")
	}
	if (len(hs.Shape) != 2 && len(hs.Shape) != 3) || (hs.DType != "F32" && hs.DType != "BF16" && hs.DType != "F16") {
		return nil, bad("hidden_states is %s %v, want F32 or BF16 [L, T, H] or [L, H]", hs.DType, hs.Shape)
	}
	if int(hs.Shape[0]) != len(h.Layers) {
		return nil, bad("hidden_states has %d layers, metadata lists %d", hs.Shape[0], len(h.Layers))
	}
	if len(ii.Shape) != 1 || (ii.DType != "I32" && ii.DType != "I64") {
		return nil, bad("input_ids is %s %v, want I32 or I64 [T]", ii.DType, ii.Shape)
	}
	if len(hs.Shape) == 3 && hs.Shape[1] != ii.Shape[0] {
		return nil, bad("hidden_states covers %d positions, input_ids has %d", hs.Shape[1], ii.Shape[0])
	}
	if hs.Bytes() > MaxHiddenBytes {
		return nil, bad("hidden_states is %d bytes, more than %d", hs.Bytes(), MaxHiddenBytes)
	}
	raw, err := r.ReadTensor("input_ids", nil)
	if err != nil {
		return nil, err
	}
	if h.InputIDs, err = dtype.Ints(ii.DType, raw); err != nil {
		return nil, bad("%v", err)
	}
	if raw, err = r.ReadTensor("hidden_states", nil); err != nil {
		return nil, err
	}
	h.Data = make([]float32, hs.Len())
	if _, err := dtype.Decode32(hs.DType, raw, h.Data); err != nil {
		return nil, bad("%v", err)
	}
	for _, d := range hs.Shape {
		h.Shape = append(h.Shape, int(d))
	}
	return h, nil
}
