package model

import (
	"fmt"
	"io/fs"
	"math"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// Head stands in for Clef's scoring network: it mixes the captured
// last-token states of the adapted layers (softmax weights Mix over layers,
// each state RMS-normalised), projects the mix (Proj, H × H), and scores
// each option by the projection's dot product with the option's mean byte
// embedding, times Temp/√H.
type Head struct {
	Mix  []float32 // one weight per captured layer
	Proj []float32 // H × H
	Temp float32
	H    int
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
	get := func(name string) ([]float32, []int64, error) {
		t, r, ok := ck.Tensor(name)
		if !ok {
			return nil, nil, fmt.Errorf("head: no %s", name)
		}
		raw, err := r.ReadTensor(name, nil)
		if err != nil {
			return nil, nil, err
		}
		out := make([]float32, t.Len())
		_, err = dtype.Decode32(t.DType, raw, out)
		return out, t.Shape, err
	}
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
		return nil, fmt.Errorf("head: malformed (temp %v, proj %v): %v", temp, shape, err)
	}
	h.Temp, h.H = temp[0], int(shape[0])
	return h, nil
}

// Score returns one logit per option.
func (h *Head) Score(m *Model, hidden []float32, layers []int, T int, options []string) []float64 {
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
	for l := 0; l < L; l++ {
		st := hidden[(l*T+T-1)*H : (l*T+T)*H]
		var ss float64
		for _, v := range st {
			ss += float64(v) * float64(v)
		}
		inv := 1 / math.Sqrt(ss/float64(H)+eps)
		for i, v := range st {
			z[i] += w[l] * float64(v) * inv
		}
	}
	p := make([]float64, H)
	for i := 0; i < H; i++ {
		for j := 0; j < H; j++ {
			p[i] += float64(h.Proj[i*H+j]) * z[j]
		}
	}
	logits := make([]float64, len(options))
	for o, opt := range options {
		e := make([]float64, H)
		n := 0
		for _, b := range []byte(opt) {
			id := int(b) + 4
			for i := 0; i < H; i++ {
				e[i] += float64(m.Embed[id*H+i])
			}
			n++
		}
		if n == 0 {
			continue
		}
		var dot float64
		for i := range e {
			dot += p[i] * e[i] / float64(n)
		}
		logits[o] = float64(h.Temp) * dot / math.Sqrt(float64(H))
	}
	return logits
}
