package service

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/demo"
	"github.com/kvit-s/clefcheck/wasm/model"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// Path is the decision API's path (FORMATS §5).
const Path = decision.Path

// DemoOptions say how the demo world's server runs its model: as vLLM runs
// a LoRA (unmerged, the default) or merged, optionally with a quantized
// base or with some modules' LoRA dropped — the drift and the failure the
// checks exist to catch.
type DemoOptions struct {
	Quant string   // "" or "nvfp4"
	Drop  []string // module short names whose LoRA is not applied
	Merge bool     // merge the LoRA into the weights
}

// NewDemo loads the demo world in dir as a decision server runs it; the
// server's Describe says how.
func NewDemo(dir string, o DemoOptions) (*Server, error) {
	if o.Quant != "" && o.Quant != "nvfp4" {
		return nil, fmt.Errorf("unknown quantization %q (nvfp4)", o.Quant)
	}
	opt := model.Options{Adapter: source.Dir(filepath.Join(dir, "adapter")), Quant: o.Quant, Merge: o.Merge, DropModules: o.Drop}
	desc := "base + LoRA at run time"
	if o.Merge {
		desc = "base + merged LoRA"
	}
	if len(o.Drop) > 0 {
		desc += ", LoRA dropped on " + strings.Join(o.Drop, ",")
	}
	if o.Quant != "" {
		desc += ", " + o.Quant + " weights, bf16 activations"
	}
	m, err := demo.LoadServer(dir, opt)
	if err != nil {
		return nil, fmt.Errorf("loading the world in %s: %w", dir, err)
	}
	return &Server{Model: m, Describe: desc}, nil
}

// BuildDemo writes the demo world into dir — checkpoints, adapter, report,
// records and full-precision references — as clefcheck world and serve do.
func BuildDemo(dir string, seed uint64) error { return demo.Build(dir, seed) }

// MaxBody bounds a decision request's body (FORMATS §5).
const MaxBody = decision.MaxBody
