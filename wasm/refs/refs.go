package refs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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

// ReadJSONL decodes every line of r into a new T with strict JSON (unknown
// fields allowed; blank lines skipped), calling fn for each. It holds one
// line at a time and refuses a line longer than MaxLine or more than
// MaxLines lines (limit.exceeded).
func ReadJSONL[T any](r io.Reader, name string, fn func(line int, v *T) error) error {
	return ReadJSONLBudget(r, name, NewBudget(), fn)
}

// ReadJSONLBudget is ReadJSONL drawing its lines and bytes from b, which
// the files of one run share.
func ReadJSONLBudget[T any](r io.Reader, name string, b *Budget, fn func(line int, v *T) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	n := 0
	for sc.Scan() {
		n++
		if err := b.take(name, int64(len(sc.Bytes())+1)); err != nil {
			return err
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := b.line(name); err != nil {
			return err
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
		if errors.Is(err, bufio.ErrTooLong) {
			return limitf(name, "line %d is longer than %d bytes (refs.MaxLine)", n+1, MaxLine)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// ReadAnswers reads every *.jsonl in dir of fsys, keyed by id: answers to
// be compared (a candidate's), checked for form (Answer.Check) but not for
// their probabilities being a distribution, which compare.Answers reports.
// A reference is read with ReadReferenceAnswers.
func ReadAnswers(fsys fs.FS, dir string) (map[string]*Answer, error) {
	return readAnswers(fsys, dir, false)
}

// ReadReferenceAnswers is ReadAnswers refusing an answer whose
// probabilities are not a distribution (CheckDistribution): a reference
// that is not one cannot judge a candidate.
func ReadReferenceAnswers(fsys fs.FS, dir string) (map[string]*Answer, error) {
	return readAnswers(fsys, dir, true)
}

func readAnswers(fsys fs.FS, dir string, reference bool) (map[string]*Answer, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, &report.Error{Code: report.FileUnreadable, Subject: dir, Msg: err.Error()}
	}
	out := map[string]*Answer{}
	b := NewBudget()
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		name := path.Join(dir, e.Name())
		f, err := fsys.Open(name)
		if err != nil {
			return nil, &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error()}
		}
		err = ReadJSONLBudget(f, name, b, func(line int, a *Answer) error {
			if err := CheckAnswer(a); err != nil {
				return err
			}
			if reference {
				if err := CheckDistribution(a.Probs); err != nil {
					return fmt.Errorf("reference answer %s: %w", report.Clip(a.ID, 80), err)
				}
			}
			if _, dup := out[a.ID]; dup {
				return fmt.Errorf("id %s appears twice", report.Clip(a.ID, 80))
			}
			out[a.ID] = a
			return nil
		})
		f.Close()
		if err != nil {
			return nil, coded(err, name)
		}
	}
	return out, nil
}

// coded keeps a limit's code, or makes err file.unreadable about name.
func coded(err error, name string) error {
	var e *report.Error
	if errors.As(err, &e) && e.Code == report.LimitExceeded {
		return e
	}
	return &report.Error{Code: report.FileUnreadable, Subject: name, Msg: err.Error()}
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
	// Nonfinite counts the NaN and infinite values ReadHidden met in the
	// states (a comparison of such states is meaningless).
	Nonfinite int
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

// ReadHidden reads and validates a hidden-state file. Its states are
// decoded chunk by chunk into Data; a file whose states would take more
// than MaxHiddenBytes decoded, or whose input_ids list more than MaxTokens,
// is refused (limit.exceeded) before anything is allocated for it.
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
		return nil, bad("metadata format is %s, want %q", report.Clip(strconv.Quote(r.Metadata["format"]), 80), HiddenFormat)
	}
	h := &Hidden{ID: r.Metadata["id"]}
	if h.ID == "" {
		return nil, bad("metadata has no id")
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
	if hs.Shape[0] > MaxLayers {
		return nil, limitf(name, "hidden_states has %d layers, more than %d (refs.MaxLayers)", hs.Shape[0], MaxLayers)
	}
	for _, s := range strings.Split(r.Metadata["layers"], ",") {
		l, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, bad("metadata layers %s is not a list of layer numbers", report.Clip(strconv.Quote(r.Metadata["layers"]), 80))
		}
		if len(h.Layers) == MaxLayers {
			return nil, limitf(name, "metadata lists more than %d layers (refs.MaxLayers)", MaxLayers)
		}
		h.Layers = append(h.Layers, l)
	}
	if int(hs.Shape[0]) != len(h.Layers) {
		return nil, bad("hidden_states has %d layers, metadata lists %d", hs.Shape[0], len(h.Layers))
	}
	if len(ii.Shape) != 1 || (ii.DType != "I32" && ii.DType != "I64") {
		return nil, bad("input_ids is %s %v, want I32 or I64 [T]", ii.DType, ii.Shape)
	}
	if ii.Shape[0] > MaxTokens {
		return nil, limitf(name, "input_ids has %d tokens, more than %d (refs.MaxTokens)", ii.Shape[0], MaxTokens)
	}
	if len(hs.Shape) == 3 && hs.Shape[1] != ii.Shape[0] {
		return nil, bad("hidden_states covers %d positions, input_ids has %d", hs.Shape[1], ii.Shape[0])
	}
	if hs.Len() > MaxHiddenBytes/4 {
		return nil, limitf(name, "hidden_states holds %d values, %d bytes decoded, more than %d (refs.MaxHiddenBytes)", hs.Len(), hs.Len()*4, MaxHiddenBytes)
	}
	raw, err := r.ReadTensor("input_ids", nil)
	if err != nil {
		return nil, err
	}
	if h.InputIDs, err = dtype.Ints(ii.DType, raw); err != nil {
		return nil, bad("%v", err)
	}
	h.Data = make([]float32, hs.Len())
	sz := int64(dtype.Size(hs.DType))
	step := hiddenChunk / sz * sz
	for off := int64(0); off < hs.Bytes(); off += step {
		if raw, err = r.ReadRange(hs, off, min(off+step, hs.Bytes()), raw); err != nil {
			return nil, err
		}
		nf, err := dtype.Decode32(hs.DType, raw, h.Data[off/sz:])
		if err != nil {
			return nil, bad("%v", err)
		}
		h.Nonfinite += nf
	}
	for _, d := range hs.Shape {
		h.Shape = append(h.Shape, int(d))
	}
	return h, nil
}
