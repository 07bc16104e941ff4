package model

import (
	"fmt"
	"io"
	"io/fs"
	"math"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// Head stands in for Clef's scoring network: it mixes the captured
// last-token states of the adapted layers (softmax weights Mix over layers,
// each state less the last token's own embedding — what the layers added —
// RMS-normalised), projects the mix (Proj, H × H), and scores
// each option by the projection's dot product with the option's vector
// (its byte embeddings with alternating signs, over √length), times Temp/√H.
type Head struct {
	Mix    []float32 // one weight per captured layer
	Proj   []float32 // H × H
	Center []float32 // subtracted from the projection (the network's bias); zeros when absent
	Temp   float32
	H      int
}

// HeadFile is the head's file name in a world directory.
const HeadFile = "head.safetensors"

// LoadHead reads head.safetensors from fsys.
func LoadHead(fsys fs.FS) (*Head, error) {
	ck, err := safetensors.OpenCheckpoint(fsys, ".", "head")
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	get := func(name string) ([]float32, []int64, error) { return readFloats(ck, name) }
	h := &Head{}
	var shape []int64
	if h.Mix, _, err = get("mix"); err != nil {
		return nil, err
	}
	if h.Proj, shape, err = get("proj"); err != nil {
		return nil, err
	}
	temp, _, err := get("temp")
	if err != nil || len(temp) != 1 || len(shape) != 2 || shape[0] != shape[1] {
		return nil, fmt.Errorf("head: malformed (temp %v, proj %v): %w", temp, shape, err)
	}
	h.Temp, h.H = temp[0], int(shape[0])
	h.Center = make([]float32, h.H)
	if _, _, ok := ck.Tensor("center"); ok {
		c, cs, err := get("center")
		if err != nil || len(cs) != 1 || int(cs[0]) != h.H {
			return nil, fmt.Errorf("head: malformed center %v: %w", cs, err)
		}
		h.Center = c
	}
	return h, nil
}

// Encode writes the head as head.safetensors.
func (h *Head) Encode(w io.Writer) error {
	return safetensors.Encode(w, map[string]string{"format": "clefcheck-head/1"}, []safetensors.Tensor{
		{Spec: safetensors.Spec{Name: "center", DType: "F32", Shape: []int64{int64(h.H)}}, Data: dtype.EncodeF32(nil, h.Center)},
		{Spec: safetensors.Spec{Name: "mix", DType: "F32", Shape: []int64{int64(len(h.Mix))}}, Data: dtype.EncodeF32(nil, h.Mix)},
		{Spec: safetensors.Spec{Name: "proj", DType: "F32", Shape: []int64{int64(h.H), int64(h.H)}}, Data: dtype.EncodeF32(nil, h.Proj)},
		{Spec: safetensors.Spec{Name: "temp", DType: "F32", Shape: []int64{1}}, Data: dtype.EncodeF32(nil, []float32{h.Temp})},
	})
}

// Score returns one logit per option.
func (h *Head) Score(m *Model, hidden []float32, layers []int, T, lastID int, options []string) []float64 {
	p := h.Features(m, hidden, layers, T, lastID)
	if p == nil {
		return nil
	}
	for i := range p {
		p[i] -= float64(h.Center[i])
	}
	return h.logits(m, p, options)
}

// Features is the projection of the mixed last-token states, before the centre.
func (h *Head) Features(m *Model, hidden []float32, layers []int, T, lastID int) []float64 {
	H := h.H
	L := len(layers)
	if L != len(h.Mix) {
		return nil
	}
	w := make([]float64, L)
	for i, v := range h.Mix {
		w[i] = float64(v)
	}
	w = Softmax(w)
	z := make([]float64, H)
	last := make([]float64, H)
	for l := 0; l < L; l++ {
		st := hidden[(l*T+T-1)*H : (l*T+T)*H]
		var ss float64
		for i, v := range st {
			// The stream at the last position less that token's embedding:
			// what the layers wrote there, which depends on the prompt.
			last[i] = float64(v) - float64(m.Embed[lastID*H+i])
			ss += last[i] * last[i]
		}
		inv := 1 / math.Sqrt(ss/float64(H)+eps)
		for i, v := range last {
			z[i] += w[l] * v * inv
		}
	}
	p := make([]float64, H)
	for i := 0; i < H; i++ {
		for j := 0; j < H; j++ {
			p[i] += float64(h.Proj[i*H+j]) * z[j]
		}
	}
	return p
}

func (h *Head) logits(m *Model, p []float64, options []string) []float64 {
	H := h.H
	logits := make([]float64, len(options))
	for o, opt := range options {
		// The option's vector: its byte embeddings with alternating
		// signs, so that labels sharing most letters still point apart.
		e := make([]float64, H)
		n := 0
		for k, b := range []byte(opt) {
			id := int(b) + 4
			sign := 1.0
			if k%2 == 1 {
				sign = -1
			}
			for i := 0; i < H; i++ {
				e[i] += sign * float64(m.Embed[id*H+i])
			}
			n++
		}
		if n == 0 {
			continue
		}
		var dot float64
		for i := range e {
			dot += p[i] * e[i] / math.Sqrt(float64(n))
		}
		logits[o] = float64(h.Temp) * dot / math.Sqrt(float64(H))
	}
	return logits
}
