package peft

import (
	"math"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
)

const clefConfig = `{"peft_type":"LORA","r":256,"lora_alpha":256,"target_modules":["q_proj","k_proj","v_proj","o_proj","in_proj_qkv","in_proj_z","in_proj_a","in_proj_b","out_proj","gate_proj","up_proj","down_proj"],"layers_to_transform":[40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63],"layers_pattern":"layers","bias":"none","use_dora":false,"task_type":"CAUSAL_LM","some_future_field":{"x":1}}`

func mustParse(t *testing.T, s string) *Config {
	t.Helper()
	c, err := ParseConfig([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClefConfig(t *testing.T) {
	c := mustParse(t, clefConfig)
	if c.R != 256 || c.Alpha != 256 || c.Scaling("x") != 1 {
		t.Fatalf("r=%d alpha=%v scaling=%v", c.R, c.Alpha, c.Scaling("x"))
	}
	if got := c.UnknownFields(); len(got) != 1 || got[0] != "some_future_field" {
		t.Errorf("unknown = %v", got)
	}
	for name, want := range map[string]bool{
		"model.language_model.layers.40.mlp.gate_proj":           true,
		"model.language_model.layers.63.self_attn.q_proj":        true,
		"model.language_model.layers.39.mlp.gate_proj":           false,
		"model.language_model.layers.40.mlp.gate_proj_x":         false,
		"model.language_model.layers.40.mlp.norm":                false,
		"model.visual.blocks.40.attn.q_proj":                     false, // layers_pattern is "layers"
		"model.language_model.layers.50.linear_attn.in_proj_qkv": true,
	} {
		if got := c.TargetsModule(name); got != want {
			t.Errorf("TargetsModule(%s) = %v, want %v", name, got, want)
		}
	}
	if len(c.Problems()) != 0 {
		t.Errorf("problems: %v", c.Problems())
	}
}

func TestScalingPatterns(t *testing.T) {
	c := mustParse(t, `{"r":16,"lora_alpha":32,"use_rslora":true,"rank_pattern":{"down_proj":4,"layers.1.mlp.gate_proj":8,"gate_proj":2},"alpha_pattern":{"up_proj":8}}`)
	cases := []struct {
		module  string
		r       int
		alpha   float64
		scaling float64
	}{
		{"model.layers.0.mlp.down_proj", 4, 32, 32 / 2.0},
		{"model.layers.1.mlp.gate_proj", 8, 32, 32 / math.Sqrt(8)}, // first matching key wins
		{"model.layers.2.mlp.gate_proj", 2, 32, 32 / math.Sqrt(2)},
		{"model.layers.0.mlp.up_proj", 16, 8, 8 / 4.0},
		{"model.layers.0.mlp.xdown_proj", 16, 32, 32 / 4.0}, // a key matches at a dot boundary only
	}
	for _, k := range cases {
		if c.RankOf(k.module) != k.r || c.AlphaOf(k.module) != k.alpha || math.Abs(c.Scaling(k.module)-k.scaling) > 1e-12 {
			t.Errorf("%s: r=%d alpha=%v s=%v, want %d %v %v", k.module, c.RankOf(k.module), c.AlphaOf(k.module), c.Scaling(k.module), k.r, k.alpha, k.scaling)
		}
	}
}

func TestRegexTargetsAndLayers(t *testing.T) {
	c := mustParse(t, `{"r":4,"lora_alpha":4,"target_modules":".*layers\\.4[0-3]\\..*(q|v)_proj","layers_to_transform":1}`)
	if !c.TargetsModule("m.layers.41.self_attn.q_proj") || c.TargetsModule("m.layers.44.self_attn.q_proj") || c.TargetsModule("m.layers.41.self_attn.k_proj") {
		t.Error("regex target matching wrong")
	}
	c = mustParse(t, `{"r":4,"lora_alpha":4,"target_modules":["q_proj"],"layers_to_transform":3}`)
	if !c.TargetsModule("m.h.3.attn.q_proj") || c.TargetsModule("m.h.4.attn.q_proj") {
		t.Error("single-int layers_to_transform wrong")
	}
	if l, ok := c.LayerOf("model.layers.17.mlp.up_proj"); !ok || l != 17 {
		t.Errorf("LayerOf = %d %v", l, ok)
	}
}

func TestNotPlainLoRA(t *testing.T) {
	for _, c := range []struct{ cfg, msg string }{
		{`{"r":8,"lora_alpha":8,"use_dora":true}`, "DoRA"},
		{`{"r":8,"lora_alpha":8,"bias":"all"}`, "biases"},
		{`{"r":8,"lora_alpha":8,"lora_bias":true}`, "lora_B carries a bias"},
		{`{"peft_type":"IA3"}`, "not a LoRA"},
	} {
		cfg := mustParse(t, c.cfg)
		ps := cfg.Problems()
		if len(ps) != 1 || ps[0].Code != report.ConfigInvalid || !strings.Contains(ps[0].Message, c.msg) {
			t.Errorf("%s: %v", c.cfg, ps)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, s := range []string{
		`[]`, `{"r":"big"}`, `{"r":0}`, `{"r":8,"lora_alpha":0}`, `{"target_modules":5}`,
		`{"target_modules":"(unclosed"}`, `{"layers_to_transform":"x"}`, `{} {}`,
		`{"rank_pattern":{"a":1,"a":2}}`, `{"rank_pattern":{"a":-1}}`,
	} {
		_, err := ParseConfig([]byte(s))
		var e *report.Error
		if err == nil {
			t.Errorf("%s accepted", s)
		} else if !asError(err, &e) || e.Code != report.ConfigInvalid {
			t.Errorf("%s: %v", s, err)
		}
	}
}

func asError(err error, e **report.Error) bool {
	x, ok := err.(*report.Error)
	*e = x
	return ok
}

func TestParseKey(t *testing.T) {
	for _, c := range []struct {
		name, module string
		half         Half
		kind         Kind
		adapter      string
	}{
		{"base_model.model.model.layers.40.mlp.gate_proj.lora_A.weight", "model.layers.40.mlp.gate_proj", HalfA, KindLoRA, ""},
		{"model.layers.40.mlp.gate_proj.lora_B.weight", "model.layers.40.mlp.gate_proj", HalfB, KindLoRA, ""},
		{"base_model.model.model.layers.1.q_proj.lora_A.default.weight", "model.layers.1.q_proj", HalfA, KindLoRA, "default"},
		{"base_model.model.model.embed_tokens.lora_embedding_A", "model.embed_tokens", HalfA, KindEmbedding, ""},
		{"base_model.model.lm_head.weight", "lm_head.weight", NotLoRA, KindSaved, ""},
		{"base_model.model.x.lora_A.bias", "x.lora_A.bias", NotLoRA, KindSaved, ""},
	} {
		k := ParseKey(c.name)
		if k.Module != c.module || k.Half != c.half || k.Kind != c.kind || k.Adapter != c.adapter {
			t.Errorf("%s → %+v", c.name, k)
		}
	}
	if ShortModule("model.language_model.layers.40.mlp.gate_proj") != "mlp.gate_proj" {
		t.Error("ShortModule")
	}
}
