package claims

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

//go:embed profiles/*.json
var embedded embed.FS

// Ref names a model on the Hub.
type Ref struct {
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
}

// Module is one row of the module table.
type Module struct {
	Name   string `json:"name"`   // e.g. mlp.gate_proj
	Layers string `json:"layers"` // all | full | linear
	Out    int    `json:"out"`
	In     int    `json:"in"`
}

// Counts are the totals of an adapter.
type Counts struct {
	Pairs      int   `json:"pairs"`
	Parameters int64 `json:"parameters"`
	Bytes      int64 `json:"bytes"`
	Large      int   `json:"large"`
}

// Profile is a claims profile.
type Profile struct {
	Name          string  `json:"name"`
	Adapter       string  `json:"adapter"`
	Description   string  `json:"description"`
	Base          Ref     `json:"base"`
	Tuned         Ref     `json:"tuned"`
	Rank          int     `json:"rank"`
	Alpha         float64 `json:"lora_alpha"`
	DType         string  `json:"dtype"`
	ModulePrefix  string  `json:"module_prefix"`
	FirstLayer    int     `json:"first_layer"`
	LastLayer     int     `json:"last_layer"`
	FullAttention struct {
		Every  int `json:"every"`
		Offset int `json:"offset"`
	} `json:"full_attention"`
	HiddenSize int      `json:"hidden_size"`
	Modules    []Module `json:"modules"`
	Fidelity   struct {
		ResidualToNoiseMin float64 `json:"residual_to_noise_min"`
		ResidualToNoiseMax float64 `json:"residual_to_noise_max"`
		RebuiltRelErrorMax float64 `json:"rebuilt_rel_error_max"`
	} `json:"fidelity"`
	Reference struct {
		Records  int      `json:"records"`
		Datasets []string `json:"datasets"`
	} `json:"reference"`
	TensorsCompared int    `json:"tensors_compared"`
	Card            Counts `json:"card"`
	Quantized       string `json:"quantized,omitempty"`
}

// Pair is one expected LoRA pair.
type Pair struct {
	Module string // full module path, e.g. model.language_model.layers.40.mlp.gate_proj
	Short  string // mlp.gate_proj
	Layer  int
	Out    int
	In     int
}

// Large reports whether both sides exceed r.
func (p Pair) Large(r int) bool { return p.Out > r && p.In > r }

// Params is r·(out+in).
func (p Pair) Params(r int) int64 { return int64(r) * int64(p.Out+p.In) }

// IsFull reports whether layer L is a full-attention layer.
func (p *Profile) IsFull(layer int) bool {
	if p.FullAttention.Every <= 0 {
		return false
	}
	return layer%p.FullAttention.Every == p.FullAttention.Offset
}

// Pairs expands the module table into every expected pair, by layer then table order.
func (p *Profile) Pairs() []Pair {
	var out []Pair
	for l := p.FirstLayer; l <= p.LastLayer; l++ {
		for _, m := range p.Modules {
			full := p.IsFull(l)
			if (m.Layers == "full" && !full) || (m.Layers == "linear" && full) {
				continue
			}
			out = append(out, Pair{Module: fmt.Sprintf("%s.%d.%s", p.ModulePrefix, l, m.Name), Short: m.Name, Layer: l, Out: m.Out, In: m.In})
		}
	}
	return out
}

// Derived computes the totals from the module table.
func (p *Profile) Derived() Counts {
	var c Counts
	bytesPer := int64(2)
	if p.DType == "F32" {
		bytesPer = 4
	}
	for _, pr := range p.Pairs() {
		c.Pairs++
		c.Parameters += pr.Params(p.Rank)
		if pr.Large(p.Rank) {
			c.Large++
		}
	}
	c.Bytes = c.Parameters * bytesPer
	return c
}

// Layers lists the adapted layer numbers.
func (p *Profile) Layers() []int {
	var out []int
	for l := p.FirstLayer; l <= p.LastLayer; l++ {
		out = append(out, l)
	}
	return out
}

// ShortNames lists the module types (the last name parts, as target_modules has them).
func (p *Profile) ShortNames() []string {
	var out []string
	for _, m := range p.Modules {
		parts := strings.Split(m.Name, ".")
		out = append(out, parts[len(parts)-1])
	}
	sort.Strings(out)
	return out
}

// Check reports where the profile contradicts itself: the card's stated
// counts against those its module table implies.
func (p *Profile) Check() []report.Finding {
	var fs []report.Finding
	d, c := p.Derived(), p.Card
	cmp := func(what string, derived, stated int64) {
		if stated != 0 && derived != stated {
			fs = append(fs, report.Finding{Code: report.ConfigMismatch, Severity: report.Fail, Subject: "claims " + p.Name,
				Message: fmt.Sprintf("the module table implies %d %s, the card states %d", derived, what, stated), Measured: derived, Expected: stated})
		}
	}
	cmp("pairs", int64(d.Pairs), int64(c.Pairs))
	cmp("parameters", d.Parameters, c.Parameters)
	cmp("bytes", d.Bytes, c.Bytes)
	cmp("large matrices", int64(d.Large), int64(c.Large))
	return fs
}

// Bounds of a profile's figures: its pairs (layers × modules) are made in
// memory, and its counts must not overflow int64.
const (
	MaxRank    = 1 << 16
	MaxLayers  = 4096
	MaxModules = 256
	MaxDim     = 1 << 24
	// MaxPairs bounds the pairs a profile calls for (safetensors reads
	// at most 100,000 tensors, i.e. 50,000 pairs).
	MaxPairs = 50_000
)

// countPairs is len(p.Pairs()) without making them.
func (p *Profile) countPairs() int {
	n := 0
	for l := p.FirstLayer; l <= p.LastLayer; l++ {
		for _, m := range p.Modules {
			full := p.IsFull(l)
			if (m.Layers == "full" && !full) || (m.Layers == "linear" && full) {
				continue
			}
			n++
		}
	}
	return n
}

// MaxSize bounds a claims profile (the built-in ones are 2 KB): every way a
// profile arrives (a file, JSON in a job, a pool worker's spec) is held to it.
const MaxSize = 1 << 20

// Load reads and parses the profile file name of fsys.
func Load(fsys fs.FS, name string) (*Profile, error) {
	data, err := source.ReadSmall(fsys, name, MaxSize)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse reads a profile strictly (unknown fields are an error: a typo in a
// claim must not silently drop it).
func Parse(data []byte) (*Profile, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("claims: %d bytes, more than the %d allowed for a profile", len(data), MaxSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	name := report.Clip(p.Name, 80)
	if p.Rank <= 0 || len(p.Modules) == 0 || p.LastLayer < p.FirstLayer {
		return nil, fmt.Errorf("claims %q: needs a positive rank, a module table and a layer range", name)
	}
	// The module table and the layer range make every expected pair: a
	// profile must not be able to ask for billions of them.
	if p.Rank > MaxRank || p.FirstLayer < 0 || int64(p.LastLayer)-int64(p.FirstLayer) >= MaxLayers || len(p.Modules) > MaxModules {
		return nil, fmt.Errorf("claims %q: r ≤ %d, layers 0 ≤ first ≤ last within %d layers and at most %d modules, please (claims.MaxRank, MaxLayers, MaxModules)", name, MaxRank, MaxLayers, MaxModules)
	}
	for _, m := range p.Modules {
		if m.Out <= 0 || m.In <= 0 || (m.Layers != "all" && m.Layers != "full" && m.Layers != "linear") {
			return nil, fmt.Errorf("claims %q: module %q needs out, in > 0 and layers all|full|linear", name, report.Clip(m.Name, 80))
		}
		if m.Out > MaxDim || m.In > MaxDim {
			return nil, fmt.Errorf("claims %q: module %q: out and in must be at most %d (claims.MaxDim)", name, report.Clip(m.Name, 80), MaxDim)
		}
	}
	if n := p.countPairs(); n > MaxPairs {
		return nil, fmt.Errorf("claims %q: the module table and layer range call for %d pairs, more than %d (claims.MaxPairs)", name, n, MaxPairs)
	}
	if p.DType == "" {
		p.DType = "BF16"
	}
	if p.Alpha == 0 {
		p.Alpha = float64(p.Rank)
	}
	return &p, nil
}

// Builtin returns an embedded profile by name.
func Builtin(name string) (*Profile, error) {
	data, err := embedded.ReadFile("profiles/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("claims: no built-in profile %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return Parse(data)
}

// Names lists the embedded profiles.
func Names() []string {
	ents, _ := embedded.ReadDir("profiles")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".json"))
	}
	return out
}

// JSON returns a profile's embedded JSON, for showing or saving.
func JSON(name string) ([]byte, error) { return embedded.ReadFile("profiles/" + name + ".json") }
