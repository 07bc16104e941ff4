// Package rebuild checks an adapter against the two checkpoints it was
// extracted from: for every adapted module, W_base + s·B·A against W_tuned.
//
// For each module, with D = W_tuned − W_base:
//
//	residual_fro      = ‖W_tuned − W_base − s·B·A‖_F
//	noise_fro         = √(Σ ulp(w)²/12) over W_tuned, the rms rounding error
//	                    of storing W_tuned in bf16 (ulp(w) = 2^(exponent(w)−7))
//	residual_to_noise = residual_fro / noise_fro
//	rebuilt_rel_error = ‖W_base + s·B·A − W_tuned‖_F / ‖W_tuned‖_F
//
// exactly as FORMATS §4 defines them. Weights are read in blocks of rows, so
// memory stays O(r·(out+in) + block·in) whatever the matrix size; s·B·A for a
// block is a float32 product (bf16 products are exact in float32, and the
// r-term sums err by ~r·2⁻²⁴ of |B·A|, far below the bf16 noise measured).
//
// It also repeats the model card's step 1: every tensor of both checkpoints
// is compared by a SHA-256 of its first 256 KiB (and its dtype and shape);
// a tensor that differs without a pair in the adapter is pair.missing.
package rebuild
