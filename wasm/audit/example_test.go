package audit_test

import (
	"bytes"
	"context"
	"fmt"
	"testing/fstest"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

func ExampleRun() {
	// A rank-2 adapter with one pair, in SVD form: A = √S·Vᵀ, B = U·√S
	// with S = diag(4, 1), so ΔW = B·A has singular values 4 and 1.
	bf16 := func(x ...float32) []byte { return dtype.EncodeBF16(nil, x) }
	const mod = "base_model.model.model.layers.0.mlp.up_proj"
	var st bytes.Buffer
	if err := safetensors.Encode(&st, nil, []safetensors.Tensor{
		{Spec: safetensors.Spec{Name: mod + ".lora_A.weight", DType: "BF16", Shape: []int64{2, 4}}, Data: bf16(2, 0, 0, 0, 0, 1, 0, 0)},
		{Spec: safetensors.Spec{Name: mod + ".lora_B.weight", DType: "BF16", Shape: []int64{3, 2}}, Data: bf16(0, 1, 2, 0, 0, 0)},
	}); err != nil {
		panic(err)
	}
	fsys := fstest.MapFS{
		"adapter/adapter_config.json":       {Data: []byte(`{"peft_type": "LORA", "r": 2, "lora_alpha": 2, "target_modules": ["up_proj"]}`)},
		"adapter/adapter_model.safetensors": {Data: st.Bytes()},
	}
	for _, mode := range []report.Mode{report.ModeQuick, report.ModeExact} {
		res, err := audit.Run(context.Background(), fsys, "adapter", audit.Options{Mode: mode})
		if err != nil {
			panic(err)
		}
		m := res.Matrices[0]
		fmt.Printf("%s: %s, %d pair, %d parameters, ‖A‖ = %.6g, σ = %.3g\n", mode, res.Verdict, res.Summary.Pairs, res.Summary.Parameters, m.NormA, m.Sigma)
	}
	// The singular values come from the bf16 factors through their Grams:
	// printed to three digits, well within their tolerance (see Tolerances).

	// Output:
	// quick: pass, 1 pair, 14 parameters, ‖A‖ = 2.23607, σ = []
	// exact: pass, 1 pair, 14 parameters, ‖A‖ = 2.23607, σ = [4 1]
}
