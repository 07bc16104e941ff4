package peft

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Config is adapter_config.json.
type Config struct {
	PeftType      string
	BaseModel     string
	R             int
	Alpha         float64
	UseRSLoRA     bool
	RankPattern   []Pattern[int]
	AlphaPattern  []Pattern[float64]
	TargetList    []string // target_modules as a list
	TargetRegex   string   // target_modules as a regex ("" when a list)
	targetRe      *regexp.Regexp
	Layers        []int // layers_to_transform; nil = all
	LayersPattern []string
	FanInFanOut   bool
	UseDoRA       bool
	Bias          string
	LoRABias      bool
	ModulesToSave []string
	Unknown       map[string]json.RawMessage // fields this reader does not interpret, kept and shown
	Raw           map[string]json.RawMessage
}

// Pattern is one entry of rank_pattern or alpha_pattern, in file order.
type Pattern[T any] struct {
	Key   string
	Value T
	re    *regexp.Regexp
}

// MaxPatterns bounds the entries of each list or pattern map of the config
// (each pattern is a compiled regular expression, matched against every
// module): a large model's rank_pattern lists a few thousand modules.
const MaxPatterns = 8192

var known = map[string]bool{
	"peft_type": true, "base_model_name_or_path": true, "r": true, "lora_alpha": true,
	"use_rslora": true, "rank_pattern": true, "alpha_pattern": true, "target_modules": true,
	"layers_to_transform": true, "layers_pattern": true, "fan_in_fan_out": true,
	"use_dora": true, "bias": true, "lora_bias": true, "modules_to_save": true,
	// Fields that do not change the weights.
	"task_type": true, "inference_mode": true, "lora_dropout": true, "init_lora_weights": true,
	"revision": true, "auto_mapping": true, "megatron_config": true, "megatron_core": true,
	"loftq_config": true, "layer_replication": true, "runtime_config": true, "eva_config": true,
	"exclude_modules": true, "trainable_token_indices": true, "corda_config": true,
}

// ParseConfig parses adapter_config.json. Errors are config.invalid
// *report.Error wrapping ErrInvalid; fields it does not know are kept in
// Unknown.
func ParseConfig(data []byte) (*Config, error) {
	bad := func(format string, a ...any) error {
		return &report.Error{Code: report.ConfigInvalid, Subject: "adapter_config.json", Msg: fmt.Sprintf(format, a...), Err: ErrInvalid}
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, bad("not a JSON object: %v", err)
	}
	if raw == nil {
		return nil, bad("not a JSON object")
	}
	if dec.More() {
		return nil, bad("trailing data after the JSON object")
	}
	c := &Config{R: 8, Alpha: 8, Bias: "none", Unknown: map[string]json.RawMessage{}, Raw: raw, PeftType: "LORA"}
	field := func(name string, dst any) error {
		v, ok := raw[name]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return bad("%s: %s is not of the expected type (%v)", name, trunc(string(v), 60), err)
		}
		return nil
	}
	var alpha json.Number
	var rankPat map[string]int
	var alphaPat map[string]float64
	for _, f := range []struct {
		name string
		dst  any
	}{
		{"peft_type", &c.PeftType}, {"base_model_name_or_path", &c.BaseModel}, {"r", &c.R},
		{"lora_alpha", &alpha}, {"use_rslora", &c.UseRSLoRA}, {"fan_in_fan_out", &c.FanInFanOut},
		{"use_dora", &c.UseDoRA}, {"bias", &c.Bias}, {"lora_bias", &c.LoRABias},
		{"modules_to_save", &c.ModulesToSave}, {"rank_pattern", &rankPat}, {"alpha_pattern", &alphaPat},
	} {
		if err := field(f.name, f.dst); err != nil {
			return nil, err
		}
	}
	if alpha != "" {
		a, err := alpha.Float64()
		if err != nil {
			return nil, bad("lora_alpha: %s is not a number", trunc(string(alpha), 40))
		}
		c.Alpha = a
	}
	if c.R <= 0 {
		return nil, bad("r = %d: the rank must be positive", c.R)
	}
	if c.Alpha == 0 || math.IsNaN(c.Alpha) || math.IsInf(c.Alpha, 0) {
		return nil, bad("lora_alpha = %v: the adapter would do nothing", c.Alpha)
	}
	// target_modules: a list or one regex string.
	if v, ok := raw["target_modules"]; ok && string(v) != "null" {
		if len(v) > 0 && v[0] == '"' {
			if err := json.Unmarshal(v, &c.TargetRegex); err != nil {
				return nil, bad("target_modules: %v", err)
			}
			re, err := regexp.Compile(`^(?:` + c.TargetRegex + `)$`)
			if err != nil {
				return nil, bad("target_modules regex %q does not compile: %v", trunc(c.TargetRegex, 80), err)
			}
			c.targetRe = re
		} else if err := json.Unmarshal(v, &c.TargetList); err != nil {
			return nil, bad("target_modules: %s is neither a list of names nor a regex", trunc(string(v), 60))
		}
	}
	// layers_to_transform: a list or one int.
	if v, ok := raw["layers_to_transform"]; ok && string(v) != "null" {
		var one int
		if err := json.Unmarshal(v, &one); err == nil {
			c.Layers = []int{one}
		} else if err := json.Unmarshal(v, &c.Layers); err != nil {
			return nil, bad("layers_to_transform: %s is neither an int nor a list of ints", trunc(string(v), 60))
		}
	}
	if v, ok := raw["layers_pattern"]; ok && string(v) != "null" {
		var one string
		if err := json.Unmarshal(v, &one); err == nil {
			c.LayersPattern = []string{one}
		} else if err := json.Unmarshal(v, &c.LayersPattern); err != nil {
			return nil, bad("layers_pattern: %s is neither a string nor a list", trunc(string(v), 60))
		}
	}
	if len(rankPat) > MaxPatterns || len(alphaPat) > MaxPatterns || len(c.TargetList) > MaxPatterns || len(c.Layers) > MaxPatterns || len(c.LayersPattern) > MaxPatterns {
		return nil, &report.Error{Code: report.LimitExceeded, Subject: "adapter_config.json", Err: ErrInvalid,
			Msg: fmt.Sprintf("rank_pattern, alpha_pattern, target_modules, layers_to_transform and layers_pattern may hold at most %d entries each (peft.MaxPatterns)", MaxPatterns)}
	}
	var err error
	if c.RankPattern, err = compilePatterns(raw["rank_pattern"], rankPat); err != nil {
		return nil, bad("rank_pattern: %v", err)
	}
	if c.AlphaPattern, err = compilePatterns(raw["alpha_pattern"], alphaPat); err != nil {
		return nil, bad("alpha_pattern: %v", err)
	}
	for _, p := range c.RankPattern {
		if p.Value <= 0 {
			return nil, bad("rank_pattern %q: rank %d must be positive", trunc(p.Key, 80), p.Value)
		}
	}
	for k := range raw {
		if !known[k] {
			c.Unknown[k] = raw[k]
		}
	}
	return c, nil
}

// compilePatterns keeps the file order of the keys (PEFT's first match wins).
func compilePatterns[T any](rawObj json.RawMessage, m map[string]T) ([]Pattern[T], error) {
	if len(m) == 0 {
		return nil, nil
	}
	keys, err := objectKeys(rawObj)
	if err != nil {
		return nil, err
	}
	var out []Pattern[T]
	for _, k := range keys {
		re, err := regexp.Compile(`^(.*\.)?(` + k + `)$`)
		if err != nil {
			return nil, fmt.Errorf("key %q does not compile: %v", trunc(k, 80), err)
		}
		out = append(out, Pattern[T]{Key: k, Value: m[k], re: re})
	}
	return out, nil
}

func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := t.(string)
		if seen[k] {
			return nil, fmt.Errorf("duplicate key %q", k)
		}
		seen[k] = true
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// Problems lists what makes the config not a plain LoRA (config.invalid).
func (c *Config) Problems() []report.Finding {
	var out []report.Finding
	add := func(msg string, measured, expected any) {
		out = append(out, report.Finding{Code: report.ConfigInvalid, Severity: report.Fail, Subject: "adapter_config.json", Message: msg, Measured: measured, Expected: expected})
	}
	if !strings.EqualFold(c.PeftType, "LORA") {
		add(fmt.Sprintf("peft_type is %q: not a LoRA adapter", c.PeftType), c.PeftType, "LORA")
	}
	if c.UseDoRA {
		add("use_dora is true: a DoRA adapter rescales the weight's columns by a learned magnitude, so ΔW is not scaling·B·A", true, false)
	}
	if c.Bias != "none" && c.Bias != "" {
		add(fmt.Sprintf("bias is %q: the adapter also trains biases, which plain LoRA does not", c.Bias), c.Bias, "none")
	}
	if c.LoRABias {
		add("lora_bias is true: lora_B carries a bias, so ΔW is not scaling·B·A alone", true, false)
	}
	return out
}

// TargetsModule reports whether PEFT would adapt the module (its full name,
// e.g. model.language_model.layers.40.mlp.gate_proj).
func (c *Config) TargetsModule(name string) bool {
	if c.targetRe != nil {
		if !c.targetRe.MatchString(name) {
			return false
		}
	} else if len(c.TargetList) > 0 {
		ok := false
		for _, t := range c.TargetList {
			if name == t {
				return true // an exact name bypasses layers_to_transform in PEFT
			}
			if strings.HasSuffix(name, "."+t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if c.Layers == nil || c.targetRe != nil {
		// PEFT applies layers_to_transform only to list targets.
		return true
	}
	l, ok := c.LayerOf(name)
	if !ok {
		return false
	}
	for _, x := range c.Layers {
		if x == l {
			return true
		}
	}
	return false
}

// LayerOf finds a module's layer index as PEFT does: the number after
// layers_pattern, or after any name part when no pattern is set.
func (c *Config) LayerOf(name string) (int, bool) {
	pats := c.LayersPattern
	if len(pats) == 0 {
		pats = []string{`[^.]*`}
	}
	for _, p := range pats {
		// PEFT splices the pattern into a regex unescaped.
		re, err := regexp.Compile(`^.*\.` + p + `\.(\d+)\.`)
		if err != nil {
			continue
		}
		if m := re.FindStringSubmatch(name); m != nil {
			n, err := strconv.Atoi(m[1])
			return n, err == nil
		}
	}
	return 0, false
}

// RankOf is the module's r after rank_pattern.
func (c *Config) RankOf(module string) int {
	for _, p := range c.RankPattern {
		if p.re.MatchString(module) {
			return p.Value
		}
	}
	return c.R
}

// AlphaOf is the module's lora_alpha after alpha_pattern.
func (c *Config) AlphaOf(module string) float64 {
	for _, p := range c.AlphaPattern {
		if p.re.MatchString(module) {
			return p.Value
		}
	}
	return c.Alpha
}

// Scaling is the factor ΔW = scaling · B · A for the module.
func (c *Config) Scaling(module string) float64 {
	r := float64(c.RankOf(module))
	if c.UseRSLoRA {
		return c.AlphaOf(module) / math.Sqrt(r)
	}
	return c.AlphaOf(module) / r
}

// UnknownFields lists the fields kept but not interpreted, sorted.
func (c *Config) UnknownFields() []string {
	var out []string
	for k := range c.Unknown {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
