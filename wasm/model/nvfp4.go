package model

import "math"

// NVFP4: 4-bit E2M1 values (±0, 0.5, 1, 1.5, 2, 3, 4, 6), one FP8 E4M3 scale
// per block of 16 values along a row, and one float32 scale per tensor
// (amax / (6·448)), as NVIDIA's format and vLLM's NVFP4 checkpoints have it.

var e2m1 = [...]float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// roundE2M1 rounds |x| ≤ 6 to the nearest E2M1 value (ties to the even code).
func roundE2M1(x float64) float64 {
	a := math.Abs(x)
	best, bestI := 0.0, 0
	for i, v := range e2m1 {
		d, bd := math.Abs(a-v), math.Abs(a-best)
		if d < bd || (d == bd && i%2 == 0 && bestI%2 == 1) {
			best, bestI = v, i
		}
	}
	return math.Copysign(best, x)
}

// RoundE4M3 rounds a non-negative x to FP8 E4M3 (bias 7, 3 mantissa bits,
// largest 448, subnormal step 2⁻⁹), ties to even.
func RoundE4M3(x float64) float64 {
	if x <= 0 || math.IsNaN(x) {
		return 0
	}
	if x >= 448 {
		return 448
	}
	e := math.Floor(math.Log2(x))
	if e < -6 {
		e = -6
	}
	step := math.Ldexp(1, int(e)-3)
	q := x / step
	r := math.RoundToEven(q)
	return math.Min(r*step, 448)
}

// QuantizeNVFP4 replaces w (rows of length in) by its NVFP4 rounding, in place.
func QuantizeNVFP4(w []float32, in int) {
	amax := 0.0
	for _, v := range w {
		amax = math.Max(amax, math.Abs(float64(v)))
	}
	if amax == 0 {
		return
	}
	global := amax / (6 * 448)
	for r := 0; r*in < len(w); r++ {
		row := w[r*in : (r+1)*in]
		for b := 0; b < in; b += 16 {
			blk := row[b:min(in, b+16)]
			bmax := 0.0
			for _, v := range blk {
				bmax = math.Max(bmax, math.Abs(float64(v)))
			}
			scale := RoundE4M3(bmax/6/global) * global
			for i, v := range blk {
				if scale == 0 {
					blk[i] = 0
					continue
				}
				blk[i] = float32(roundE2M1(math.Max(-6, math.Min(6, float64(v)/scale))) * scale)
			}
		}
	}
}
