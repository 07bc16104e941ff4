package rebuild

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestSampleMatchesRebuild: a sampled block of s·B·A equals W_tuned − W_base
// to within the adapter's fidelity (an independent route: the checkpoints).
func TestSampleMatchesRebuild(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 5); err != nil {
		t.Fatal(err)
	}
	adapter := source.Dir(filepath.Join(dir, world.AdapterDir))
	ck, err := safetensors.OpenCheckpoint(adapter, ".", "adapter_model")
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	mod := "model.language_model.layers.44.mlp.gate_proj"
	if len(Modules(ck)) != 186 {
		t.Fatalf("%d modules", len(Modules(ck)))
	}
	blk, err := Sample(adapter, ck, mod, 10, 20, 5, 30)
	if err != nil {
		t.Fatal(err)
	}
	read := func(sub string) []float32 {
		c, err := safetensors.OpenCheckpoint(os.DirFS(filepath.Join(dir, sub)), ".", "model")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ti, r, _ := c.Tensor(mod + ".weight")
		raw, _ := r.ReadTensor(ti.Name, nil)
		out := make([]float32, ti.Len())
		dtype.Decode32(ti.DType, raw, out)
		return out
	}
	base, tuned := read(world.BaseDir), read(world.TunedDir)
	var num, den float64
	for i := 0; i < blk.Rows; i++ {
		for j := 0; j < blk.Cols; j++ {
			d := float64(tuned[(10+i)*64+5+j]) - float64(base[(10+i)*64+5+j])
			e := blk.Values[i*blk.Cols+j] - d
			num += e * e
			den += d * d
		}
	}
	if rel := math.Sqrt(num / den); rel > 0.02 {
		t.Errorf("block differs from W_tuned − W_base by %.3g (relative)", rel)
	}
	if blk.Rows != 20 || blk.Cols != 30 || blk.RMS <= 0 || blk.Min >= blk.Max {
		t.Errorf("block %+v", blk)
	}
	// Clamped at the edges.
	if b, _ := Sample(adapter, ck, mod, 190, 20, 60, 30); b.Rows != 2 || b.Cols != 4 {
		t.Errorf("edge block %d × %d", b.Rows, b.Cols)
	}
}
