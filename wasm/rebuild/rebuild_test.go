package rebuild

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// tensor reads one tensor of a checkpoint folder as float64 (rows × cols).
func tensor(t *testing.T, dir, stem, name string) *mat.Dense {
	t.Helper()
	c, err := safetensors.OpenCheckpoint(os.DirFS(dir), ".", stem)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ti, r, ok := c.Tensor(name)
	if !ok || len(ti.Shape) != 2 {
		t.Fatalf("%s: no 2-d tensor %s", dir, name)
	}
	raw, err := r.ReadTensor(ti.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := make([]float32, ti.Len())
	if _, err := dtype.Decode32(ti.DType, raw, f); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, len(f))
	for i, v := range f {
		x[i] = float64(v)
	}
	return mat.NewDense(int(ti.Shape[0]), int(ti.Shape[1]), x)
}

// TestRunAgainstIndependent: on the demo world every pair rebuilds within
// the claims, and one module's figures match an independent float64
// computation with gonum of ‖W_tuned − W_base − s·B·A‖_F and of the bf16
// noise of W_tuned (FORMATS §4).
func TestRunAgainstIndependent(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 3); err != nil {
		t.Fatal(err)
	}
	prof, err := claims.Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	ad, base, tuned := filepath.Join(dir, world.AdapterDir), filepath.Join(dir, world.BaseDir), filepath.Join(dir, world.TunedDir)
	opt := Options{Adapter: source.Dir(ad), Base: source.Dir(base), Tuned: source.Dir(tuned), Claims: prof}
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != report.VerdictPass || len(res.Matrices) != prof.Derived().Pairs || len(res.Differing) != prof.Derived().Pairs || res.Compared != prof.TensorsCompared {
		t.Fatalf("genuine: %s, %d rebuilt, %d differing, %d compared: %v", res.Verdict, len(res.Matrices), len(res.Differing), res.Compared, res.Findings)
	}

	mod := "model.language_model.layers.44.mlp.down_proj"
	var got *Matrix
	for _, m := range res.Matrices {
		if m.Module == mod {
			got = m
		}
	}
	if got == nil {
		t.Fatalf("no figures for %s", mod)
	}
	wb, wt := tensor(t, base, "model", mod+".weight"), tensor(t, tuned, "model", mod+".weight")
	a := tensor(t, ad, "adapter_model", "base_model.model."+mod+".lora_A.weight")
	b := tensor(t, ad, "adapter_model", "base_model.model."+mod+".lora_B.weight")
	var ba, d mat.Dense
	ba.Mul(b, a) // scaling is 1 in the demo profile (lora_alpha = r)
	d.Sub(wt, wb)
	delta := mat.Norm(&d, 2)
	d.Sub(&d, &ba)
	residual := mat.Norm(&d, 2)
	var noise2 float64
	r, c := wt.Dims()
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if w := wt.At(i, j); w != 0 {
				_, e := math.Frexp(math.Abs(w)) // |w| = f·2^e, f in [0.5, 1): exponent(w) = e − 1
				ulp := math.Ldexp(1, e-1-7)
				noise2 += ulp * ulp / 12
			}
		}
	}
	// The engine works in float32 (products of bf16 values are exact there;
	// an r-term sum errs by ~r·2⁻²⁴ of |B·A|): 10⁻³ relative is ample.
	for _, x := range []struct {
		name      string
		got, want float64
	}{{"delta_fro", got.DeltaFro, delta}, {"residual_fro", got.ResidualFro, residual}, {"noise_fro", got.NoiseFro, math.Sqrt(noise2)}} {
		if math.Abs(x.got-x.want) > 1e-3*x.want || x.want == 0 {
			t.Errorf("%s %s = %.6g, independently %.6g", mod, x.name, x.got, x.want)
		}
	}
	if rel := mat.Norm(&d, 2) / mat.Norm(wt, 2); math.Abs(got.RebuiltRelError-rel) > 1e-3*rel {
		t.Errorf("rebuilt_rel_error %.6g, independently %.6g", got.RebuiltRelError, rel)
	}

	// One factor scaled by 1 %: that module's residual leaves the bf16 noise
	// far behind, and only that module fails.
	tamper(t, ad, "base_model.model."+mod+".lora_B.weight", 1.01)
	res, err = Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]int{}
	for _, f := range res.Findings {
		if f.Code == report.RebuildError && f.Severity == report.Fail {
			bad[f.Subject]++
		}
	}
	if res.Verdict != report.VerdictFail || len(bad) != 1 || bad[mod] == 0 {
		t.Fatalf("tampered: %s, rebuild.error on %v", res.Verdict, bad)
	}
}

// tamper rewrites the adapter with one tensor scaled.
func tamper(t *testing.T, dir, name string, by float32) {
	t.Helper()
	p := filepath.Join(dir, "adapter_model.safetensors")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := safetensors.NewReader(bytes.NewReader(data), int64(len(data)), p)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	found := false
	for _, ti := range r.Tensors {
		raw, err := r.ReadTensor(ti.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ti.Name == name {
			f := make([]float32, ti.Len())
			dtype.Decode32(ti.DType, raw, f)
			for i := range f {
				f[i] *= by
			}
			raw, found = dtype.EncodeBF16(nil, f), true
		}
		ts = append(ts, safetensors.Tensor{Spec: safetensors.Spec{Name: ti.Name, DType: ti.DType, Shape: ti.Shape}, Data: raw})
	}
	if !found {
		t.Fatalf("no tensor %s", name)
	}
	var buf bytes.Buffer
	if err := safetensors.Encode(&buf, r.Metadata, ts); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
