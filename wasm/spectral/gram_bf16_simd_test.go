//go:build goexperiment.simd && amd64

package spectral

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// packRef is packBF16 and packLastRow in plain Go: the words of
// ⌈k/2⌉ pairs and whether every value of rows 0..k−1 is pairable.
func packRef(p []float32, k, nb int) (words []uint32, ok bool) {
	words = make([]uint32, nb*pairWords)
	ok = true
	for b := 0; b < nb; b++ {
		for t := 0; t < k; t++ {
			for j := 0; j < PanelBlock; j++ {
				u := math.Float32bits(p[PanelAt(t, b*PanelBlock+j)])
				ok = ok && pairable(u)
				w := &words[b*pairWords+t/2*PanelBlock+j]
				if t&1 == 0 {
					*w |= u >> 16
				} else {
					*w |= u & 0xffff0000
				}
			}
		}
	}
	return words, ok
}

// TestPackBF16 compares the packer (assembly for the pairs, Go for an odd
// last row) with packRef for every k, and checks its test of the values:
// each kind of value VDPBF16PS could treat differently from the float32
// kernel, put in one place of rows 0..k−1, must send the panel to the
// fallback; the same value in a stale row (k and beyond) must not; the
// range's own edges (2⁻⁴⁰, the largest bf16 under 2⁶⁰) are pairable.
func TestPackBF16(t *testing.T) {
	if !HasBF16() {
		t.Skip("this CPU lacks AVX512_BF16")
	}
	rng := rand.New(rand.NewPCG(61, 62))
	const n = 48
	nb := n / PanelBlock
	unpairable := []float32{
		math.Float32frombits(0x3f800001),         // 1 + 2⁻²³: not a bf16
		float32(math.Ldexp(1, -41)),              // tiny
		math.Float32frombits(0x00010000),         // a bf16 subnormal
		-float32(math.Ldexp(1, -60)),             // tiny, negative
		float32(math.Ldexp(1, 60)),               // huge
		float32(math.Inf(-1)),                    // infinite
		math.Float32frombits(0x7fc00000),         // NaN
		math.Float32frombits(0x2b800000 - 1<<16), // the largest bf16 under 2⁻⁴⁰
	}
	pairableEdges := []float32{float32(math.Ldexp(1, -40)), -math.Float32frombits(0x5d7f0000), 0, float32(math.Copysign(0, -1))}
	for k := 1; k <= PanelRows; k++ {
		p := randBF16(rng, PanelRows*n, 0.05)
		for i := range p {
			if pairable(math.Float32bits(p[i])) {
				continue
			}
			p[i] = 0.5 // randBF16 can round to something tiny
		}
		for _, v := range pairableEdges {
			p[PanelAt(rng.IntN(k), rng.IntN(n))] = v
		}
		check := func(what string, wantOK bool) {
			t.Helper()
			s := make([]uint32, nb*pairWords)
			for i := range s {
				s[i] = 0xdeadbeef // every word the packer owns is written
			}
			bad := 0
			if k >= 2 {
				bad = packBF16(&p[0], &s[0], k/2, nb)
			}
			if k&1 == 1 && bad == 0 {
				bad = packLastRow(p, s, k-1, nb)
			}
			want, ok := packRef(p, k, nb)
			if ok != wantOK || (bad == 0) != ok {
				t.Fatalf("k=%d %s: bad=%d, packRef ok=%v, want ok=%v", k, what, bad, ok, wantOK)
			}
			if !ok {
				return
			}
			for b := 0; b < nb; b++ {
				for i := 0; i < (k+1)/2*PanelBlock; i++ {
					if got, w := s[b*pairWords+i], want[b*pairWords+i]; got != w {
						t.Fatalf("k=%d %s: block %d word %d: %#08x, want %#08x", k, what, b, i, got, w)
					}
				}
			}
		}
		for r := k; r < PanelRows; r++ { // stale rows: never read
			for c := 0; c < n; c++ {
				p[PanelAt(r, c)] = unpairable[(r+c)%len(unpairable)]
			}
		}
		check("pairable", true)
		for _, v := range unpairable {
			at := PanelAt(rng.IntN(k), rng.IntN(n))
			old := p[at]
			p[at] = v
			check(fmt.Sprintf("with %g (%#08x)", v, math.Float32bits(v)), false)
			p[at] = old
		}
		if k&1 == 1 { // the last row, which packLastRow takes
			at := PanelAt(k-1, rng.IntN(n))
			old := p[at]
			p[at] = unpairable[0]
			check("last row", false)
			p[at] = old
		}
	}
}

// TestBF16KernelFallsBack runs syrkPanelBF16 on panels with stale rows
// beyond k (unpairable values and NaNs, as a feeder leaves them): on a
// pairable panel it agrees with the portable kernel within
// CheckGramKernel's tolerance and stays finite; with one unpairable value
// in rows 0..k−1 it gives exactly what syrkPanelAVX512 gives (the
// fallback), tiny values included, whose products VDPBF16PS would flush.
func TestBF16KernelFallsBack(t *testing.T) {
	if !HasBF16() {
		t.Skip("this CPU lacks AVX512_BF16")
	}
	rng := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{16, 64, 272} {
		for _, k := range []int{1, 2, 5, 31, 64} {
			p := make([]float32, PanelRows*n)
			for i, v := range randBF16(rng, PanelRows*n, 0.05) {
				p[i] = v
				if !pairable(math.Float32bits(v)) {
					p[i] = -0.25
				}
			}
			for r := k; r < PanelRows; r++ {
				for c := 0; c < n; c++ {
					p[PanelAt(r, c)] = float32(math.NaN())
				}
			}
			want := make([]float64, n*n)
			syrkPanelGo(p, k, n, want)
			got := make([]float64, n*n)
			if !bf16Panel(p, k, n, got) {
				t.Fatalf("n=%d k=%d: a pairable panel went to the fallback", n, k)
			}
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					if d := math.Abs(got[i*n+j] - want[i*n+j]); !(d <= 1e-6*math.Sqrt(want[i*n+i]*want[j*n+j])+1e-30) {
						t.Fatalf("n=%d k=%d (%d,%d): %g, portable %g", n, k, i, j, got[i*n+j], want[i*n+j])
					}
				}
			}
			for _, v := range []float32{float32(math.Ldexp(1, -70)), 0.1, float32(math.Ldexp(3, 70))} {
				at := PanelAt(rng.IntN(k), rng.IntN(n))
				old := p[at]
				p[at] = v
				g1 := make([]float64, n*n)
				g2 := make([]float64, n*n)
				if bf16Panel(p, k, n, g1) {
					t.Fatalf("n=%d k=%d: %g did not send the panel to the fallback", n, k, v)
				}
				syrkPanelBF16(p, k, n, g1)
				syrkPanelAVX512(p, k, n, g2)
				for i := range g1 {
					if math.Float64bits(g1[i]) != math.Float64bits(g2[i]) {
						t.Fatalf("n=%d k=%d with %g: entry %d is %g, the float32 kernel's %g: no fallback", n, k, v, i, g1[i], g2[i])
					}
				}
				p[at] = old
			}
		}
	}
}
