package world

import (
	"fmt"

	"github.com/kvit-s/clefcheck/wasm/claims"
)

// Arch is the tiny model's architecture.
type Arch struct {
	Layers       int `json:"layers"`
	Hidden       int `json:"hidden_size"`
	Intermediate int `json:"intermediate_size"`
	Vocab        int `json:"vocab_size"`
	// Full attention.
	Heads   int `json:"num_attention_heads"`
	KVHeads int `json:"num_key_value_heads"`
	HeadDim int `json:"head_dim"`
	// Linear attention.
	LinKHeads  int `json:"linear_num_key_heads"`
	LinVHeads  int `json:"linear_num_value_heads"`
	LinHeadDim int `json:"linear_head_dim"`
	// The adapted layers and the attention pattern.
	FirstAdapted int `json:"first_adapted_layer"`
	LastAdapted  int `json:"last_adapted_layer"`
	FullEvery    int `json:"full_attention_every"`
	FullOffset   int `json:"full_attention_offset"`
	Rank         int `json:"rank"`
	VisionBlocks int `json:"vision_blocks"`
}

// Demo is the demo world's architecture; its module table is the demo
// claims profile's.
var Demo = Arch{
	Layers: 64, Hidden: 64, Intermediate: 192, Vocab: 260,
	Heads: 6, KVHeads: 2, HeadDim: 16,
	LinKHeads: 2, LinVHeads: 6, LinHeadDim: 16,
	FirstAdapted: 40, LastAdapted: 63, FullEvery: 4, FullOffset: 3, Rank: 16,
	VisionBlocks: 2,
}

// IsFull reports whether layer l uses full attention.
func (a Arch) IsFull(l int) bool { return l%a.FullEvery == a.FullOffset }

// Module is one matrix of a layer: its name under the layer and out × in.
type Module struct {
	Name    string
	Out, In int
}

// LayerModules lists the large matrices of layer l (the ones an adapter may touch).
func (a Arch) LayerModules(l int) []Module {
	H, I := a.Hidden, a.Intermediate
	mods := []Module{}
	if a.IsFull(l) {
		q := a.Heads * a.HeadDim
		kv := a.KVHeads * a.HeadDim
		mods = append(mods,
			Module{"self_attn.q_proj", 2 * q, H}, // query and output gate
			Module{"self_attn.k_proj", kv, H},
			Module{"self_attn.v_proj", kv, H},
			Module{"self_attn.o_proj", H, q})
	} else {
		k := a.LinKHeads * a.LinHeadDim
		v := a.LinVHeads * a.LinHeadDim
		mods = append(mods,
			Module{"linear_attn.in_proj_qkv", 2*k + v, H},
			Module{"linear_attn.in_proj_z", v, H},
			Module{"linear_attn.in_proj_a", a.LinVHeads, H},
			Module{"linear_attn.in_proj_b", a.LinVHeads, H},
			Module{"linear_attn.out_proj", H, v})
	}
	mods = append(mods,
		Module{"mlp.gate_proj", I, H},
		Module{"mlp.up_proj", I, H},
		Module{"mlp.down_proj", H, I})
	return mods
}

// Prefix is the module path prefix of decoder layers.
const Prefix = "model.language_model.layers"

// ModulePath is the full module name of a layer's module.
func ModulePath(l int, name string) string { return fmt.Sprintf("%s.%d.%s", Prefix, l, name) }

// Adapted reports whether layer l is adapted.
func (a Arch) Adapted(l int) bool { return l >= a.FirstAdapted && l <= a.LastAdapted }

// Small tensors of a layer that are never adapted (norms and the like).
func (a Arch) layerExtras(l int) []tensorSpec {
	H := a.Hidden
	p := func(s string) string { return ModulePath(l, s) }
	out := []tensorSpec{
		{p("input_layernorm.weight"), []int{H}, kindNorm},
		{p("post_attention_layernorm.weight"), []int{H}, kindNorm},
	}
	if a.IsFull(l) {
		out = append(out,
			tensorSpec{p("self_attn.q_norm.weight"), []int{a.HeadDim}, kindNorm},
			tensorSpec{p("self_attn.k_norm.weight"), []int{a.HeadDim}, kindNorm})
	} else {
		out = append(out,
			tensorSpec{p("linear_attn.A_log"), []int{a.LinVHeads}, kindALog},
			tensorSpec{p("linear_attn.dt_bias"), []int{a.LinVHeads}, kindSmall},
			tensorSpec{p("linear_attn.norm.weight"), []int{a.LinHeadDim}, kindNorm})
	}
	return out
}

// Profile checks that the architecture's module table is the claims
// profile's: the same modules, layers and shapes.
func (a Arch) Profile(p *claims.Profile) error {
	want := map[string][2]int{}
	for _, pr := range p.Pairs() {
		want[pr.Module] = [2]int{pr.Out, pr.In}
	}
	n := 0
	for l := a.FirstAdapted; l <= a.LastAdapted; l++ {
		for _, m := range a.LayerModules(l) {
			path := ModulePath(l, m.Name)
			w, ok := want[path]
			if !ok {
				return fmt.Errorf("world: %s is not in claims %s", path, p.Name)
			}
			if w != [2]int{m.Out, m.In} {
				return fmt.Errorf("world: %s is %d × %d, claims %s say %d × %d", path, m.Out, m.In, p.Name, w[0], w[1])
			}
			n++
		}
	}
	if n != len(want) || p.Rank != a.Rank {
		return fmt.Errorf("world: %d modules at rank %d, claims %s have %d at rank %d", n, a.Rank, p.Name, len(want), p.Rank)
	}
	return nil
}
