package world

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

type tensorKind int

const (
	kindMatrix tensorKind = iota // N(0, 1/in)
	kindNorm                     // 1 + N(0, 0.05²)
	kindALog                     // log U(1, 16)
	kindSmall                    // N(0, 0.1²)
	kindEmbed                    // N(0, 1)
)

type tensorSpec struct {
	Name  string
	Shape []int
	Kind  tensorKind
}

func (t tensorSpec) len() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// tensors lists every tensor of the tiny model, in a fixed order.
func (a Arch) tensors() []tensorSpec {
	H := a.Hidden
	out := []tensorSpec{{"model.language_model.embed_tokens.weight", []int{a.Vocab, H}, kindEmbed}}
	for l := 0; l < a.Layers; l++ {
		for _, m := range a.LayerModules(l) {
			out = append(out, tensorSpec{ModulePath(l, m.Name) + ".weight", []int{m.Out, m.In}, kindMatrix})
		}
		out = append(out, a.layerExtras(l)...)
	}
	out = append(out, tensorSpec{"model.language_model.norm.weight", []int{H}, kindNorm})
	// A stand-in vision tower: identical in both checkpoints, as in Clef.
	for b := 0; b < a.VisionBlocks; b++ {
		p := fmt.Sprintf("model.visual.blocks.%d.", b)
		out = append(out,
			tensorSpec{p + "attn.qkv.weight", []int{3 * 32, 32}, kindMatrix},
			tensorSpec{p + "attn.proj.weight", []int{32, 32}, kindMatrix},
			tensorSpec{p + "norm1.weight", []int{32}, kindNorm})
	}
	out = append(out, tensorSpec{"lm_head.weight", []int{a.Vocab, H}, kindMatrix})
	return out
}

// residualOut reports whether a matrix writes into the residual stream.
func residualOut(name string) bool {
	for _, suf := range []string{"o_proj.weight", "out_proj.weight", "down_proj.weight"} {
		if len(name) >= len(suf) && name[len(name)-len(suf):] == suf {
			return true
		}
	}
	return false
}

// rngFor gives each tensor its own stream, so values do not depend on order.
func rngFor(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

func (t tensorSpec) values(seed uint64) []float32 {
	rng := rngFor(seed, t.Name)
	x := make([]float32, t.len())
	for i := range x {
		var v float64
		switch t.Kind {
		case kindMatrix:
			v = rng.NormFloat64() / math.Sqrt(float64(t.Shape[len(t.Shape)-1]))
			if residualOut(t.Name) {
				// GPT-2's initialisation: projections into the residual
				// stream scaled by 1/√(2·layers), so that each layer adds
				// a small update, as in a trained model, rather than a
				// chaotic rewrite of the stream.
				v /= math.Sqrt(2 * float64(Demo.Layers))
			}
		case kindNorm:
			v = 1 + 0.05*rng.NormFloat64()
		case kindALog:
			v = math.Log(1 + 15*rng.Float64())
		case kindSmall:
			v = 0.1 * rng.NormFloat64()
		case kindEmbed:
			v = rng.NormFloat64()
		}
		x[i] = dtype.RoundBF16(float32(v))
	}
	return x
}

// DeltaScale is ‖ΔW‖_F / ‖W‖_F of the tuned change in each adapted matrix;
// GateDeltaScale that of in_proj_a and in_proj_b.
const (
	DeltaScale     = 0.15
	GateDeltaScale = 0.5
)

// delta returns the rank-r change of an adapted matrix: Σ sₖ·uₖ·vₖᵀ with
// Gaussian directions and sₖ decaying as 0.85ᵏ.
func delta(seed uint64, name string, out, in, r int, target float64) *mat.Dense {
	rng := rngFor(seed^0x5eed, name)
	d := mat.NewDense(out, in, nil)
	s := make([]float64, r)
	var ss float64
	for k := range s {
		s[k] = math.Pow(0.85, float64(k))
		ss += s[k] * s[k]
	}
	// Scale so that ‖Δ‖_F ≈ target (the directions are nearly orthogonal).
	scale := target / math.Sqrt(ss)
	u := make([]float64, out)
	v := make([]float64, in)
	for k := 0; k < r; k++ {
		for i := range u {
			u[i] = rng.NormFloat64() / math.Sqrt(float64(out))
		}
		for j := range v {
			v[j] = rng.NormFloat64() / math.Sqrt(float64(in))
		}
		var o mat.Dense
		o.Outer(scale*s[k], mat.NewVecDense(out, u), mat.NewVecDense(in, v))
		d.Add(d, &o)
	}
	return d
}

// Files names the world's parts, relative to its directory.
const (
	BaseDir    = "base"
	TunedDir   = "tuned"
	AdapterDir = "adapter"
)

// Meta is world.json.
type Meta struct {
	Format string `json:"format"`
	Seed   uint64 `json:"seed"`
	Arch   Arch   `json:"arch"`
	Claims string `json:"claims"`
}

// Generate writes the tiny world into dir: base/ and tuned/ (sharded
// checkpoints with an index), adapter/ (adapter_config.json,
// adapter_model.safetensors, extraction-report.json) and world.json.
func Generate(dir string, seed uint64) error {
	a := Demo
	p, err := claims.Builtin("demo")
	if err != nil {
		return err
	}
	if err := a.Profile(p); err != nil {
		return err
	}
	specs := a.tensors()
	base := map[string][]float32{}
	tuned := map[string][]float32{}
	differing := 0
	for _, t := range specs {
		w := t.values(seed)
		base[t.Name] = w
		tuned[t.Name] = w
	}
	type adapted struct {
		module  string
		out, in int
	}
	var mods []adapted
	for l := a.FirstAdapted; l <= a.LastAdapted; l++ {
		for _, m := range a.LayerModules(l) {
			name := ModulePath(l, m.Name) + ".weight"
			w := base[name]
			var wf float64
			for _, x := range w {
				wf += float64(x) * float64(x)
			}
			scale := DeltaScale
			if m.Name == "linear_attn.in_proj_a" || m.Name == "linear_attn.in_proj_b" {
				// The decay and update gates carry a larger share of the
				// fine-tune, so that a server that drops their LoRA (a
				// failure real servers have had) visibly drifts.
				scale = GateDeltaScale
			}
			d := delta(seed, name, m.Out, m.In, a.Rank, scale*math.Sqrt(wf))
			t := make([]float32, len(w))
			for i := 0; i < m.Out; i++ {
				for j := 0; j < m.In; j++ {
					t[i*m.In+j] = dtype.RoundBF16(float32(float64(w[i*m.In+j]) + d.At(i, j)))
				}
			}
			tuned[name] = t
			differing++
			mods = append(mods, adapted{ModulePath(l, m.Name), m.Out, m.In})
		}
	}
	if err := writeCheckpoint(filepath.Join(dir, BaseDir), specs, base, 3); err != nil {
		return err
	}
	if err := writeCheckpoint(filepath.Join(dir, TunedDir), specs, tuned, 3); err != nil {
		return err
	}
	// The card's step 2: factor each difference.
	rep := &extraction.Report{
		Format: extraction.Format, Base: p.Base, Tuned: p.Tuned, Rank: a.Rank, DType: "BF16",
		TensorsCompared: extraction.I(len(specs)), TensorsDiffering: extraction.I(differing),
	}
	var ts []safetensors.Tensor
	for _, m := range mods {
		w, t := base[m.module+".weight"], tuned[m.module+".weight"]
		fa, fb, x := Extract(w, t, m.out, m.in, a.Rank)
		x.Module = m.module
		rep.Matrices = append(rep.Matrices, x)
		ts = append(ts,
			safetensors.Tensor{Spec: safetensors.Spec{Name: "base_model.model." + m.module + ".lora_A.weight", DType: "BF16", Shape: []int64{int64(a.Rank), int64(m.in)}}, Data: dtype.EncodeBF16(nil, fa)},
			safetensors.Tensor{Spec: safetensors.Spec{Name: "base_model.model." + m.module + ".lora_B.weight", DType: "BF16", Shape: []int64{int64(m.out), int64(a.Rank)}}, Data: dtype.EncodeBF16(nil, fb)})
	}
	ad := filepath.Join(dir, AdapterDir)
	if err := os.MkdirAll(ad, 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := safetensors.Encode(&buf, map[string]string{"format": "pt"}, ts); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(ad, "adapter_model.safetensors"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(ad, "adapter_config.json"), AdapterConfig(p, "clefcheck/demo-base")); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(ad, "extraction-report.json"), rep); err != nil {
		return err
	}
	if err := writeHead(dir, seed, a); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "world.json"), Meta{Format: "clefcheck-world/1", Seed: seed, Arch: a, Claims: "demo"})
}

// AdapterConfig is the PEFT adapter_config.json for a claims profile.
func AdapterConfig(p *claims.Profile, base string) map[string]any {
	return map[string]any{
		"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": base,
		"r": p.Rank, "lora_alpha": p.Alpha, "lora_dropout": 0.0, "bias": "none",
		"use_rslora": false, "use_dora": false, "fan_in_fan_out": false,
		"target_modules": p.ShortNames(), "layers_to_transform": p.Layers(), "layers_pattern": "layers",
		"rank_pattern": map[string]int{}, "alpha_pattern": map[string]float64{},
		"modules_to_save": nil, "inference_mode": true,
	}
}

// Extract factors D = t − w (out × in, bf16 values) as the card's step 2:
// top-r SVD, A = √S·Vᵀ, B = U·√S, rounded to bf16, zero-padded where a side
// is below r. It returns A (r × in), B (out × r) and the figures of the
// extraction report for the matrix.
func Extract(w, t []float32, out, in, r int) (a, b []float32, x extraction.Matrix) {
	d := mat.NewDense(out, in, nil)
	var tuned2, noise2, delta2 float64
	for i := 0; i < out; i++ {
		for j := 0; j < in; j++ {
			tv := t[i*in+j]
			v := float64(tv) - float64(w[i*in+j])
			d.Set(i, j, v)
			delta2 += v * v
			tuned2 += float64(tv) * float64(tv)
			u := dtype.ULPBF16(tv)
			noise2 += u * u / 12
		}
	}
	var svd mat.SVD
	svd.Factorize(d, mat.SVDThin)
	var U, V mat.Dense
	svd.UTo(&U)
	svd.VTo(&V)
	sv := svd.Values(nil)
	a = make([]float32, r*in)
	b = make([]float32, out*r)
	sing := make([]float64, r)
	for k := 0; k < r && k < len(sv); k++ {
		sing[k] = sv[k]
		sq := math.Sqrt(sv[k])
		for j := 0; j < in; j++ {
			a[k*in+j] = dtype.RoundBF16(float32(sq * V.At(j, k)))
		}
		for i := 0; i < out; i++ {
			b[i*r+k] = dtype.RoundBF16(float32(sq * U.At(i, k)))
		}
	}
	// Residual of the stored factors: ‖D − B·A‖_F.
	var res2 float64
	for i := 0; i < out; i++ {
		for j := 0; j < in; j++ {
			var s float64
			for k := 0; k < r; k++ {
				s += float64(b[i*r+k]) * float64(a[k*in+j])
			}
			e := d.At(i, j) - s
			res2 += e * e
		}
	}
	x = extraction.Matrix{
		Shape:           []int{out, in},
		DeltaFro:        extraction.F(math.Sqrt(delta2)),
		SingularValues:  sing,
		ResidualFro:     extraction.F(math.Sqrt(res2)),
		NoiseFro:        extraction.F(math.Sqrt(noise2)),
		ResidualToNoise: extraction.F(math.Sqrt(res2) / math.Sqrt(noise2)),
		RebuiltRelError: extraction.F(math.Sqrt(res2) / math.Sqrt(tuned2)),
	}
	return a, b, x
}

// writeCheckpoint writes tensors as n shards plus an index, the Hub's layout.
func writeCheckpoint(dir string, specs []tensorSpec, vals map[string][]float32, n int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var total int64
	for _, t := range specs {
		total += int64(2 * t.len())
	}
	per := total/int64(n) + 1
	idx := struct {
		Metadata  map[string]int64  `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}{map[string]int64{"total_size": total}, map[string]string{}}
	var groups [][]tensorSpec
	var cur []tensorSpec
	var size int64
	for _, t := range specs {
		cur = append(cur, t)
		size += int64(2 * t.len())
		if size >= per && len(groups) < n-1 {
			groups = append(groups, cur)
			cur, size = nil, 0
		}
	}
	groups = append(groups, cur)
	for gi, g := range groups {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", gi+1, len(groups))
		var ts []safetensors.Tensor
		for _, t := range g {
			shape := make([]int64, len(t.Shape))
			for i, d := range t.Shape {
				shape[i] = int64(d)
			}
			ts = append(ts, safetensors.Tensor{Spec: safetensors.Spec{Name: t.Name, DType: "BF16", Shape: shape}, Data: dtype.EncodeBF16(nil, vals[t.Name])})
			idx.WeightMap[t.Name] = name
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
		var buf bytes.Buffer
		if err := safetensors.Encode(&buf, map[string]string{"format": "pt"}, ts); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, "model.safetensors.index.json"), idx)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// writeHead writes the scoring head (package model reads it): a mix weight
// per adapted layer, an H × H projection and a temperature, float32.
func writeHead(dir string, seed uint64, a Arch) error {
	rng := rngFor(seed, "head")
	L := a.LastAdapted - a.FirstAdapted + 1
	mix := make([]float32, L)
	for i := range mix {
		mix[i] = float32(rng.NormFloat64())
	}
	proj := make([]float32, a.Hidden*a.Hidden)
	for i := range proj {
		proj[i] = float32(rng.NormFloat64() / math.Sqrt(float64(a.Hidden)))
	}
	var buf bytes.Buffer
	err := safetensors.Encode(&buf, map[string]string{"format": "clefcheck-head/1"}, []safetensors.Tensor{
		{Spec: safetensors.Spec{Name: "mix", DType: "F32", Shape: []int64{int64(L)}}, Data: dtype.EncodeF32(nil, mix)},
		{Spec: safetensors.Spec{Name: "proj", DType: "F32", Shape: []int64{int64(a.Hidden), int64(a.Hidden)}}, Data: dtype.EncodeF32(nil, proj)},
		{Spec: safetensors.Spec{Name: "temp", DType: "F32", Shape: []int64{1}}, Data: dtype.EncodeF32(nil, []float32{2.5})},
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "head.safetensors"), buf.Bytes(), 0o644)
}
