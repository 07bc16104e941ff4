//go:build js && wasm

package msg

import (
	"math"
	"slices"
	"syscall/js"
	"testing"
)

// TestPairsRefs: the references a deal carries come back as they went
// (any float64, NaN's bits included), a module without one as nil, and a
// message whose lengths do not fit its array is refused (BadRefs).
func TestPairsRefs(t *testing.T) {
	refs := [][]float64{{3, 2.5, 1e-300}, nil, {math.Inf(1), -0.0, math.NaN(), 7}}
	in := Pairs{Modules: []string{"a", "b", "c"}, Refs: refs}
	got := PairsOf(in.Value()).Refs
	if len(got) != 3 || got[1] != nil {
		t.Fatalf("refs %v", got)
	}
	for i, r := range refs {
		if len(got[i]) != len(r) {
			t.Fatalf("ref %d: %v, sent %v", i, got[i], r)
		}
		for k := range r {
			if math.Float64bits(got[i][k]) != math.Float64bits(r[k]) {
				t.Fatalf("ref %d[%d]: %v, sent %v", i, k, got[i][k], r[k])
			}
		}
	}
	if m := PairsOf(Pairs{Modules: []string{"a"}}.Value()); m.Refs != nil || m.BadRefs {
		t.Fatalf("no refs sent, %v read (refused: %v)", m.Refs, m.BadRefs)
	}
	if m := PairsOf(in.Value()); m.BadRefs {
		t.Fatal("well-formed refs refused")
	}
	bad := func(name string, edit func(o js.Value)) {
		o := in.Value()
		edit(o)
		if m := PairsOf(o); m.Refs != nil || !m.BadRefs {
			t.Errorf("%s: refs %v read (refused: %v)", name, m.Refs, m.BadRefs)
		}
	}
	bad("lengths short", func(o js.Value) { o.Get("refLens").Call("pop") })
	bad("lengths over", func(o js.Value) { o.Get("refLens").SetIndex(0, 99) })
	bad("negative", func(o js.Value) { o.Get("refLens").SetIndex(0, -1) })
	bad("not numbers", func(o js.Value) { o.Get("refLens").SetIndex(0, "3") })
	bad("sum short", func(o js.Value) { o.Get("refLens").SetIndex(2, 1) })
	bad("not a Float64Array", func(o js.Value) { o.Set("refs", js.Global().Get("Array").New(1, 2)) })
	// A view into a larger buffer reads from its own offset.
	o := Pairs{Modules: []string{"x"}}.Value()
	buf := js.Global().Get("Float64Array").New(4)
	for i, v := range []float64{9, 1, 2, 9} {
		buf.SetIndex(i, v)
	}
	o.Set("refs", js.Global().Get("Float64Array").New(buf.Get("buffer"), 8, 2))
	o.Set("refLens", js.ValueOf([]any{2}))
	if r := PairsOf(o).Refs; len(r) != 1 || !slices.Equal(r[0], []float64{1, 2}) {
		t.Fatalf("view: %v", r)
	}
}
