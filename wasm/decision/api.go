package decision

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Path is the decision endpoint.
const Path = "/v1/systemone"

// Request is a decision request.
type Request struct {
	ID           string   `json:"id"`
	Prompt       string   `json:"prompt"`
	Options      []string `json:"options"`
	ReturnHidden bool     `json:"return_hidden"`
}

// Limits on a request, enforced by the server and checked by the client
// before sending.
const (
	MaxOptions   = 64
	MaxOptionLen = 1024
	MaxPromptLen = 256 << 10
	MaxIDLen     = 512
	MaxBody      = 1 << 20
)

// Validate checks a request against the limits.
func (r *Request) Validate() error {
	switch {
	case r.ID == "" || len(r.ID) > MaxIDLen:
		return fmt.Errorf("id must be 1–%d bytes", MaxIDLen)
	case len(r.Prompt) > MaxPromptLen:
		return fmt.Errorf("prompt is %d bytes, more than %d", len(r.Prompt), MaxPromptLen)
	case len(r.Options) < 2 || len(r.Options) > MaxOptions:
		return fmt.Errorf("need 2–%d options, got %d", MaxOptions, len(r.Options))
	}
	seen := map[string]bool{}
	for _, o := range r.Options {
		if o == "" || len(o) > MaxOptionLen {
			return fmt.Errorf("an option must be 1–%d bytes", MaxOptionLen)
		}
		if seen[o] {
			return fmt.Errorf("option %q is listed twice", o)
		}
		seen[o] = true
	}
	return nil
}

// Hidden carries hidden states in a response.
type Hidden struct {
	DType  string `json:"dtype"`
	Shape  []int  `json:"shape"`
	Layers []int  `json:"layers"`
	Data   string `json:"data"` // base64 of little-endian values
}

// Timing of a decision.
type Timing struct {
	Total float64 `json:"total"`
}

// Response is a decision.
type Response struct {
	ID       string    `json:"id"`
	Model    string    `json:"model"`
	Choice   string    `json:"choice"`
	Options  []string  `json:"options"`
	Logits   []float64 `json:"logits"`
	Probs    []float64 `json:"probs"`
	TimingMS Timing    `json:"timing_ms"`
	InputIDs []int64   `json:"input_ids,omitempty"`
	Hidden   *Hidden   `json:"hidden,omitempty"`
}

// ErrorBody is the JSON of an error response.
type ErrorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

// EncodeF32 packs float32 values as base64 of little-endian bytes.
func EncodeF32(x []float32) string {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Floats decodes the hidden states, checking dtype, shape and length.
func (h *Hidden) Floats() ([]float32, error) {
	if h.DType != "F32" {
		return nil, fmt.Errorf("hidden dtype %q, want F32", h.DType)
	}
	if len(h.Shape) != 2 && len(h.Shape) != 3 {
		return nil, fmt.Errorf("hidden shape %v, want [L, T, H] or [L, H]", h.Shape)
	}
	n := 1
	for _, d := range h.Shape {
		if d <= 0 || d > 1<<24 {
			return nil, fmt.Errorf("hidden shape %v", h.Shape)
		}
		n *= d
		if n > 1<<28 {
			return nil, fmt.Errorf("hidden shape %v is too large", h.Shape)
		}
	}
	if len(h.Layers) != h.Shape[0] {
		return nil, fmt.Errorf("hidden has %d layers in its shape but lists %d", h.Shape[0], len(h.Layers))
	}
	if base64.StdEncoding.DecodedLen(len(h.Data)) < 4*n || base64.StdEncoding.DecodedLen(len(h.Data)) > 4*n+3 {
		return nil, fmt.Errorf("hidden data holds about %d bytes, shape %v needs %d", base64.StdEncoding.DecodedLen(len(h.Data)), h.Shape, 4*n)
	}
	b, err := base64.StdEncoding.DecodeString(h.Data)
	if err != nil {
		return nil, fmt.Errorf("hidden data: %w", err)
	}
	if len(b) != 4*n {
		return nil, fmt.Errorf("hidden data is %d bytes, shape %v needs %d", len(b), h.Shape, 4*n)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// checkDuplicateKeys walks JSON at the token level and rejects an object
// with a key twice (encoding/json would silently keep the last one).
func checkDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // next string token is a key
	}
	var stack []*frame
	for {
		t, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := t.(type) {
		case json.Delim:
			switch v {
			case '{':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: true, keys: map[string]bool{}, key: true})
				continue
			case '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{})
				continue
			default:
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[v] {
					return errors.New("duplicate key " + strconv.Quote(v))
				}
				top.keys[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.obj {
			top.key = true
		}
	}
}
