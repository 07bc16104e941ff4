package model

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/peft"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// Special tokens.
const (
	PAD = 0
	BOS = 1
	EOS = 2
	SEP = 3
)

// MaxTokens bounds a prompt's length; longer prompts are cut (keeping the end).
const MaxTokens = 256

// Tokenize encodes a prompt and its options: BOS, each option's bytes
// followed by SEP, then the prompt's bytes, then EOS — the prompt last, so
// that it is closest to the last token the head reads.
func Tokenize(prompt string, options []string) []int32 {
	ids := []int32{BOS}
	for _, o := range options {
		for _, b := range []byte(o) {
			ids = append(ids, int32(b)+4)
		}
		ids = append(ids, SEP)
	}
	for _, b := range []byte(prompt) {
		ids = append(ids, int32(b)+4)
	}
	ids = append(ids, EOS)
	if len(ids) > MaxTokens {
		ids = append([]int32{BOS}, ids[len(ids)-MaxTokens+1:]...)
	}
	return ids
}

// Linear is a weight (out × in, row-major float32) with an optional LoRA.
type Linear struct {
	Out, In int
	W       []float32
	// Unmerged LoRA: y += S·B·(A·x). A is r × in, B is out × r.
	A, B []float32
	R    int
	S    float32
	// Quantized marks weights rounded to NVFP4; activations are then
	// rounded to bf16 after the product.
	Quantized bool
}

// Forward computes y = x·Wᵀ (+ LoRA) for x of T rows.
func (l *Linear) Forward(x []float32, T int) []float32 {
	y := make([]float32, T*l.Out)
	X := blas32.General{Rows: T, Cols: l.In, Stride: l.In, Data: x}
	Y := blas32.General{Rows: T, Cols: l.Out, Stride: l.Out, Data: y}
	blas32.Gemm(blas.NoTrans, blas.Trans, 1, X, blas32.General{Rows: l.Out, Cols: l.In, Stride: l.In, Data: l.W}, 0, Y)
	if l.R > 0 {
		ax := make([]float32, T*l.R)
		AX := blas32.General{Rows: T, Cols: l.R, Stride: l.R, Data: ax}
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, X, blas32.General{Rows: l.R, Cols: l.In, Stride: l.In, Data: l.A}, 0, AX)
		blas32.Gemm(blas.NoTrans, blas.Trans, l.S, AX, blas32.General{Rows: l.Out, Cols: l.R, Stride: l.R, Data: l.B}, 1, Y)
	}
	if l.Quantized {
		for i := range y {
			y[i] = dtype.RoundBF16(y[i])
		}
	}
	return y
}

// Model is a loaded tiny model.
type Model struct {
	Arch   world.Arch
	Embed  []float32 // vocab × H
	Norm   []float32
	Layers []*Layer
	Head   *Head
}

// Layer holds one decoder layer's weights.
type Layer struct {
	Index    int
	Full     bool
	InNorm   []float32
	PostNorm []float32
	Lin      map[string]*Linear // by module name under the layer (mlp.gate_proj, ...)
	QNorm    []float32
	KNorm    []float32
	ALog     []float32
	DtBias   []float32
	LinNorm  []float32
}

// Options choose how the adapter is applied.
type Options struct {
	Adapter     fs.FS    // nil: no adapter
	Merge       bool     // merge W + s·B·A instead of applying it at run time
	Quant       string   // "" or "nvfp4": base weights in NVFP4, activations in bf16
	DropModules []string // module short names (in_proj_a) whose LoRA is ignored
}

// Load reads a model from a world checkpoint directory (base or tuned), the
// scoring head from the world, and applies the options.
func Load(ckpt fs.FS, head *Head, opt Options) (*Model, error) {
	ck, err := safetensors.OpenCheckpoint(ckpt, ".", "model")
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	a := world.Demo
	get := func(name string) ([]float32, error) {
		out, _, err := readFloats(ck, name)
		return out, err
	}
	m := &Model{Arch: a, Head: head}
	if m.Embed, err = get("model.language_model.embed_tokens.weight"); err != nil {
		return nil, err
	}
	if m.Norm, err = get("model.language_model.norm.weight"); err != nil {
		return nil, err
	}
	for l := 0; l < a.Layers; l++ {
		L := &Layer{Index: l, Full: a.IsFull(l), Lin: map[string]*Linear{}}
		p := func(s string) string { return world.ModulePath(l, s) }
		if L.InNorm, err = get(p("input_layernorm.weight")); err != nil {
			return nil, err
		}
		if L.PostNorm, err = get(p("post_attention_layernorm.weight")); err != nil {
			return nil, err
		}
		if L.Full {
			if L.QNorm, err = get(p("self_attn.q_norm.weight")); err != nil {
				return nil, err
			}
			if L.KNorm, err = get(p("self_attn.k_norm.weight")); err != nil {
				return nil, err
			}
		} else {
			if L.ALog, err = get(p("linear_attn.A_log")); err != nil {
				return nil, err
			}
			if L.DtBias, err = get(p("linear_attn.dt_bias")); err != nil {
				return nil, err
			}
			if L.LinNorm, err = get(p("linear_attn.norm.weight")); err != nil {
				return nil, err
			}
		}
		for _, mod := range a.LayerModules(l) {
			w, err := get(p(mod.Name) + ".weight")
			if err != nil {
				return nil, err
			}
			L.Lin[mod.Name] = &Linear{Out: mod.Out, In: mod.In, W: w}
		}
		m.Layers = append(m.Layers, L)
	}
	if opt.Quant != "" {
		if opt.Quant != "nvfp4" {
			return nil, fmt.Errorf("model: unknown quantization %q (have nvfp4)", opt.Quant)
		}
		for _, L := range m.Layers {
			for _, lin := range L.Lin {
				QuantizeNVFP4(lin.W, lin.In)
				lin.Quantized = true
			}
		}
	}
	if opt.Adapter != nil {
		if err := m.applyAdapter(opt); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Model) applyAdapter(opt Options) error {
	cfg, err := peft.ReadConfig(opt.Adapter, "adapter_config.json")
	if errors.Is(err, peft.ErrUnreadable) {
		return fmt.Errorf("model: adapter: %w", err)
	}
	if err != nil {
		return err
	}
	ck, err := safetensors.OpenCheckpoint(opt.Adapter, ".", "adapter_model")
	if err != nil {
		return err
	}
	defer ck.Close()
	drop := map[string]bool{}
	for _, d := range opt.DropModules {
		drop[strings.TrimSpace(d)] = true
	}
	type pair struct{ a, b string }
	pairs := map[string]*pair{}
	for _, name := range ck.Names() {
		k := peft.ParseKey(name)
		if k.Kind != peft.KindLoRA {
			continue
		}
		p := pairs[k.Module]
		if p == nil {
			p = &pair{}
			pairs[k.Module] = p
		}
		if k.Half == peft.HalfA {
			p.a = name
		} else {
			p.b = name
		}
	}
	read := func(name string) ([]float32, []int64, error) { return readFloats(ck, name) }
	for mod, p := range pairs {
		var layer int
		var short string
		if _, err := fmt.Sscanf(strings.TrimPrefix(mod, world.Prefix+"."), "%d.", &layer); err != nil || layer < 0 || layer >= len(m.Layers) {
			return fmt.Errorf("model: adapter module %s is not a decoder layer's", mod)
		}
		short = strings.TrimPrefix(mod, fmt.Sprintf("%s.%d.", world.Prefix, layer))
		lin := m.Layers[layer].Lin[short]
		if lin == nil || p.a == "" || p.b == "" {
			return fmt.Errorf("model: adapter pair %s does not fit the model", mod)
		}
		parts := strings.Split(short, ".")
		if drop[parts[len(parts)-1]] || drop[short] {
			continue
		}
		A, sa, err := read(p.a)
		if err != nil {
			return err
		}
		B, sb, err := read(p.b)
		if err != nil {
			return err
		}
		r := int(sa[0])
		if len(sa) != 2 || len(sb) != 2 || int(sa[1]) != lin.In || int(sb[0]) != lin.Out || int(sb[1]) != r {
			return fmt.Errorf("model: adapter pair %s has shapes %v, %v for a %d × %d weight", mod, sa, sb, lin.Out, lin.In)
		}
		s := float32(cfg.Scaling(mod))
		if opt.Merge {
			W := blas32.General{Rows: lin.Out, Cols: lin.In, Stride: lin.In, Data: lin.W}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, s, blas32.General{Rows: lin.Out, Cols: r, Stride: r, Data: B}, blas32.General{Rows: r, Cols: lin.In, Stride: lin.In, Data: A}, 1, W)
			continue
		}
		lin.A, lin.B, lin.R, lin.S = A, B, r, s
	}
	return nil
}

// readFloats reads a tensor of a checkpoint as float32, refusing NaN and Inf.
func readFloats(ck *safetensors.Checkpoint, name string) ([]float32, []int64, error) {
	t, r, ok := ck.Tensor(name)
	if !ok {
		return nil, nil, fmt.Errorf("model: no tensor %s", name)
	}
	raw, err := r.ReadTensor(name, nil)
	if err != nil {
		return nil, nil, err
	}
	out := make([]float32, t.Len())
	nf, err := dtype.Decode32(t.DType, raw, out)
	if err != nil {
		return nil, nil, err
	}
	if nf > 0 {
		return nil, nil, fmt.Errorf("model: %s has %d non-finite values", name, nf)
	}
	return out, t.Shape, nil
}

// Result of a forward pass.
type Result struct {
	Hidden []float32 // captured layers × T × H, the residual stream after each adapted layer
	Layers []int
	T      int
	Logits []float64
	Probs  []float64
	Choice int
}

// Forward runs the model on token ids and scores the options.
func (m *Model) Forward(ids []int32, options []string) (*Result, error) {
	a := m.Arch
	H, T := a.Hidden, len(ids)
	if T == 0 {
		return nil, fmt.Errorf("model: no tokens")
	}
	x := make([]float32, T*H)
	for t, id := range ids {
		if id < 0 || int(id) >= a.Vocab {
			return nil, fmt.Errorf("model: token %d out of range", id)
		}
		copy(x[t*H:(t+1)*H], m.Embed[int(id)*H:(int(id)+1)*H])
	}
	res := &Result{T: T}
	for _, L := range m.Layers {
		h := rmsnorm(x, T, H, L.InNorm)
		var mix []float32
		if L.Full {
			mix = m.attention(L, h, T)
		} else {
			mix = m.linearAttention(L, h, T)
		}
		addInto(x, mix)
		h = rmsnorm(x, T, H, L.PostNorm)
		g := L.Lin["mlp.gate_proj"].Forward(h, T)
		u := L.Lin["mlp.up_proj"].Forward(h, T)
		for i := range g {
			g[i] = silu(g[i]) * u[i]
		}
		addInto(x, L.Lin["mlp.down_proj"].Forward(g, T))
		if a.Adapted(L.Index) {
			res.Hidden = append(res.Hidden, x...)
			res.Layers = append(res.Layers, L.Index)
		}
	}
	if m.Head != nil {
		res.Logits = m.Head.Score(m, res.Hidden, res.Layers, T, int(ids[T-1]), options)
		res.Probs = Softmax(res.Logits)
		for i, p := range res.Probs {
			if p > res.Probs[res.Choice] {
				res.Choice = i
			}
		}
	}
	return res, nil
}

func (m *Model) attention(L *Layer, h []float32, T int) []float32 {
	a := m.Arch
	D, Hq, KV := a.HeadDim, a.Heads, a.KVHeads
	qg := L.Lin["self_attn.q_proj"].Forward(h, T) // T × 2·Hq·D: queries, then gates
	k := L.Lin["self_attn.k_proj"].Forward(h, T)
	v := L.Lin["self_attn.v_proj"].Forward(h, T)
	qw := 2 * Hq * D
	for t := 0; t < T; t++ {
		for hd := 0; hd < Hq; hd++ {
			rmsnormInPlace(qg[t*qw+hd*D:t*qw+(hd+1)*D], L.QNorm)
		}
		for hd := 0; hd < KV; hd++ {
			rmsnormInPlace(k[(t*KV+hd)*D:(t*KV+hd+1)*D], L.KNorm)
		}
	}
	out := make([]float32, T*Hq*D)
	scores := make([]float64, T)
	scale := 1 / math.Sqrt(float64(D))
	for hd := 0; hd < Hq; hd++ {
		kvh := hd / (Hq / KV)
		for t := 0; t < T; t++ {
			q := qg[t*qw+hd*D : t*qw+(hd+1)*D]
			mx := math.Inf(-1)
			for s := 0; s <= t; s++ {
				kk := k[(s*KV+kvh)*D : (s*KV+kvh+1)*D]
				var dot float64
				for i := range q {
					dot += float64(q[i]) * float64(kk[i])
				}
				scores[s] = dot * scale
				mx = math.Max(mx, scores[s])
			}
			var sum float64
			for s := 0; s <= t; s++ {
				scores[s] = math.Exp(scores[s] - mx)
				sum += scores[s]
			}
			o := out[(t*Hq+hd)*D : (t*Hq+hd+1)*D]
			for s := 0; s <= t; s++ {
				w := float32(scores[s] / sum)
				vv := v[(s*KV+kvh)*D : (s*KV+kvh+1)*D]
				for i := range o {
					o[i] += w * vv[i]
				}
			}
			gate := qg[t*qw+Hq*D+hd*D : t*qw+Hq*D+(hd+1)*D]
			for i := range o {
				o[i] *= sigmoid(gate[i])
			}
		}
	}
	return L.Lin["self_attn.o_proj"].Forward(out, T)
}

func (m *Model) linearAttention(L *Layer, h []float32, T int) []float32 {
	a := m.Arch
	Kh, Vh, D := a.LinKHeads, a.LinVHeads, a.LinHeadDim
	qkv := L.Lin["linear_attn.in_proj_qkv"].Forward(h, T) // T × (2·Kh·D + Vh·D)
	z := L.Lin["linear_attn.in_proj_z"].Forward(h, T)     // T × Vh·D
	av := L.Lin["linear_attn.in_proj_a"].Forward(h, T)    // T × Vh
	bv := L.Lin["linear_attn.in_proj_b"].Forward(h, T)    // T × Vh
	w := 2*Kh*D + Vh*D
	out := make([]float32, T*Vh*D)
	S := make([]float64, D*D)
	kv := make([]float64, D)
	for j := 0; j < Vh; j++ {
		kh := j / (Vh / Kh)
		clear(S)
		decayRate := math.Exp(float64(L.ALog[j]))
		for t := 0; t < T; t++ {
			row := qkv[t*w : (t+1)*w]
			q := l2norm(row[kh*D : (kh+1)*D])
			k := l2norm(row[Kh*D+kh*D : Kh*D+(kh+1)*D])
			v := row[2*Kh*D+j*D : 2*Kh*D+(j+1)*D]
			g := math.Exp(-decayRate * softplus(float64(av[t*Vh+j])+float64(L.DtBias[j])))
			beta := 1 / (1 + math.Exp(-float64(bv[t*Vh+j])))
			// S ← g·S; S ← S + β·k·(v − Sᵀk)ᵀ
			for i := range S {
				S[i] *= g
			}
			for c := 0; c < D; c++ {
				var s float64
				for r := 0; r < D; r++ {
					s += S[r*D+c] * k[r]
				}
				kv[c] = float64(v[c]) - s
			}
			for r := 0; r < D; r++ {
				f := beta * k[r]
				for c := 0; c < D; c++ {
					S[r*D+c] += f * kv[c]
				}
			}
			o := out[(t*Vh+j)*D : (t*Vh+j+1)*D]
			for c := 0; c < D; c++ {
				var s float64
				for r := 0; r < D; r++ {
					s += S[r*D+c] * q[r]
				}
				o[c] = float32(s / math.Sqrt(float64(D)))
			}
			rmsnormInPlace(o, L.LinNorm)
			zz := z[(t*Vh+j)*D : (t*Vh+j+1)*D]
			for c := range o {
				o[c] *= silu(zz[c])
			}
		}
	}
	return L.Lin["linear_attn.out_proj"].Forward(out, T)
}

// ---- small numerics ----

const eps = 1e-6

func rmsnorm(x []float32, T, H int, w []float32) []float32 {
	out := make([]float32, len(x))
	copy(out, x)
	for t := 0; t < T; t++ {
		rmsnormInPlace(out[t*H:(t+1)*H], w)
	}
	return out
}

func rmsnormInPlace(x, w []float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	for i := range x {
		x[i] = float32(float64(x[i])*inv) * w[i]
	}
}

func l2norm(x []float32) []float64 {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	inv := 1 / math.Sqrt(ss+eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) * inv
	}
	return out
}

func addInto(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}

func silu(x float32) float32 { return x / (1 + float32(math.Exp(-float64(x)))) }

func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(-float64(x)))) }

func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// Softmax of logits, in float64.
func Softmax(z []float64) []float64 {
	if len(z) == 0 {
		return nil
	}
	mx := math.Inf(-1)
	for _, v := range z {
		mx = math.Max(mx, v)
	}
	out := make([]float64, len(z))
	var s float64
	for i, v := range z {
		out[i] = math.Exp(v - mx)
		s += out[i]
	}
	for i := range out {
		out[i] /= s
	}
	return out
}
