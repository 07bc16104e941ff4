package model

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

func TestE4M3AgainstEnumeration(t *testing.T) {
	// Every finite positive E4M3 value, from its bits: the rounding must
	// return the nearest one.
	var vals []float64
	for e := 0; e < 16; e++ {
		for m := 0; m < 8; m++ {
			if e == 15 && m == 7 {
				continue // NaN
			}
			var v float64
			if e == 0 {
				v = float64(m) / 8 * math.Ldexp(1, -6)
			} else {
				v = (1 + float64(m)/8) * math.Ldexp(1, e-7)
			}
			vals = append(vals, v)
		}
	}
	if vals[len(vals)-1] != 448 {
		t.Fatalf("largest E4M3 %v", vals[len(vals)-1])
	}
	for _, x := range []float64{1e-4, 0.0013, 0.3, 1, 1.06, 1.0625, 3.3, 17, 100, 300, 447, 1000} {
		got := RoundE4M3(x)
		best := vals[0]
		for _, v := range vals {
			if math.Abs(v-math.Min(x, 448)) < math.Abs(best-math.Min(x, 448)) {
				best = v
			}
		}
		if math.Abs(got-best) > 1e-12 && math.Abs(math.Abs(got-x)-math.Abs(best-x)) > 1e-12 {
			t.Errorf("RoundE4M3(%v) = %v, nearest %v", x, got, best)
		}
	}
}

func TestNVFP4(t *testing.T) {
	w := make([]float32, 64)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)) * float64(1+i%7))
	}
	q := append([]float32(nil), w...)
	QuantizeNVFP4(q, 32)
	// Each block of 16 takes at most 8 magnitudes (E2M1) times one scale.
	for b := 0; b < 64; b += 16 {
		mags := map[float32]bool{}
		for _, v := range q[b : b+16] {
			mags[float32(math.Abs(float64(v)))] = true
		}
		if len(mags) > 8 {
			t.Errorf("block %d has %d magnitudes", b/16, len(mags))
		}
	}
	var num, den float64
	for i := range w {
		num += float64(q[i]-w[i]) * float64(q[i]-w[i])
		den += float64(w[i]) * float64(w[i])
	}
	if rel := math.Sqrt(num / den); rel > 0.2 || rel == 0 {
		t.Errorf("relative error %v", rel)
	}
}

func TestForward(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 3); err != nil {
		t.Fatal(err)
	}
	head, err := LoadHead(source.Dir(dir))
	if err != nil {
		t.Fatal(err)
	}
	ids := Tokenize("Which tool measures temperature?", []string{"A", "B", "C", "D"})
	if ids[0] != BOS || ids[len(ids)-1] != EOS || int(ids[1]) != 'A'+4 || ids[2] != SEP || int(ids[9]) != 'W'+4 {
		t.Fatalf("tokens %v", ids[:4])
	}
	load := func(ck string, opt Options) *Result {
		m, err := Load(source.Dir(filepath.Join(dir, ck)), head, opt)
		if err != nil {
			t.Fatal(err)
		}
		r, err := m.Forward(ids, []string{"A", "B", "C", "D"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tuned := load(world.TunedDir, Options{})
	again := load(world.TunedDir, Options{})
	ad := source.Dir(filepath.Join(dir, world.AdapterDir))
	unmerged := load(world.BaseDir, Options{Adapter: ad})
	merged := load(world.BaseDir, Options{Adapter: ad, Merge: true})
	base := load(world.BaseDir, Options{})
	if len(tuned.Layers) != 24 || tuned.Layers[0] != 40 || len(tuned.Hidden) != 24*len(ids)*64 {
		t.Fatalf("captured %v, %d values", tuned.Layers, len(tuned.Hidden))
	}
	relL2 := func(a, b []float32) float64 {
		var n, d float64
		for i := range a {
			n += float64(a[i]-b[i]) * float64(a[i]-b[i])
			d += float64(a[i]) * float64(a[i])
		}
		return math.Sqrt(n / d)
	}
	if relL2(tuned.Hidden, again.Hidden) != 0 {
		t.Error("forward pass is not deterministic")
	}
	// base + LoRA reproduces the tuned model to the adapter's fidelity,
	// merged or not; the base alone does not.
	if e := relL2(tuned.Hidden, unmerged.Hidden); e > 5e-3 {
		t.Errorf("unmerged adapter: rel L2 %v", e)
	}
	if e := relL2(unmerged.Hidden, merged.Hidden); e > 1e-4 {
		t.Errorf("merged vs unmerged: rel L2 %v", e)
	}
	if e := relL2(tuned.Hidden, base.Hidden); e < 0.05 {
		t.Errorf("the adapter changes the hidden states by only %v", e)
	}
	var s float64
	for _, p := range tuned.Probs {
		s += p
	}
	if math.Abs(s-1) > 1e-9 || len(tuned.Logits) != 4 {
		t.Errorf("probs %v", tuned.Probs)
	}
}
