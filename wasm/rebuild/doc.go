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
// is compared by a SHA-256 of its first 256 KiB (and its dtype and shape),
// IdentityConcurrency heads at a time, one read each (over HTTP one Range
// request: the host makes reads exact once the headers are in, Options.Exact).
// A tensor that differs without a pair in the adapter is pair.missing; the
// differing set is checked against the claims (the card: 186 of 1,184
// differ, exactly the adapted matrices of layers 40–63).
//
// # The plan
//
// Before a byte of tensor data is read, the headers give the plan: the
// identity check's heads (2 × min(size, 256 KiB) per tensor) and the rows
// of both checkpoints, with the adapter's factor bytes besides. A plan
// beyond Options.MaxBytes does not start (check.invalid, saying how many
// rows would fit). For Clef, 32 rows of each of the 186 modules from both
// checkpoints are ≈ 163 MB (a row is 10–35 KB of bf16), the identity
// check's heads ≈ 330 MB; the default bound (jobs.DefaultMaxBytes) is
// 512 MiB. The adapter's A factors are read whole (651 MB for Clef), B's
// sampled rows only: the adapter is the artifact audited, usually read
// whole anyway, and is not in the bound.
//
// # A sampled rebuild
//
// With Options.Rows = m, each module's stored rows (rows of the out × in
// weight; with fan_in_fan_out the weight is stored in × out, and a stored
// row is a column of W, whose product s·B·A[:, x] needs A's column x and B
// whole) are sampled: m of the N rows uniformly without replacement
// (Floyd's algorithm), from a PCG stream seeded by (Options.Seed, FNV-64
// of the module name), so a run can be repeated exactly and the choice does
// not depend on the order of work. Rows are contiguous byte ranges;
// consecutive chosen rows are read as one.
//
// For a sampled row i the sums over its `in` elements give
//
//	y_i = ‖R_i‖² (residual), x_i = Σ ulp(t)²/12 (noise), t_i = ‖T_i‖² (tuned)
//
// and the figures' squares are ratios of population totals, Y/X and Y/T.
// Their estimates are the ratios of the sample's sums (the classical ratio
// estimator; the norms themselves are the expansion estimates √(N/m·Σ_S)):
//
//	R̂ = Σ_S y / Σ_S x   →  residual_to_noise ≈ √R̂
//	Q̂ = Σ_S y / Σ_S t   →  rebuilt_rel_error ≈ √Q̂
//
// Its variance (Cochran, Sampling Techniques, §6.3–6.4), linearised, with
// the finite-population correction, from the sample's row-to-row spread of
// e_i = y_i − R̂·x_i:
//
//	SE²(R̂) = (1 − m/N) · Σ_S e_i² / ((m − 1)·m) / x̄²,   x̄ = Σ_S x / m
//
// and the interval is R̂·exp(±t·SE/R̂), t Student's quantile on m − 1 degrees
// of freedom — a t-interval on log R̂ (the delta method), because R̂ is a
// positive ratio whose sampling distribution leans right: on the demo world
// the symmetric interval's misses were mostly truths above it (14 in 150
// runs of 32 rows), the log one's 9.
// Square roots of the ends give the figures' intervals (monotone). Where m
// reaches N the estimate is exact and the interval a point.
//
// The level: a run judges two intervals per sampled module (K = 2 × the
// modules of which not every row is read, 372 for Clef at 32 rows), and
// a genuine adapter must not fail or warn by chance in more than 0.1 % of
// runs, so each interval is at 1 − 0.001/K (Bonferroni; t at
// 1 − 0.001/(2K)): all intervals together cover their true values with
// probability ≥ 99.9 % (Family), if each is calibrated. (It was 95 %: one
// run in twenty of a genuine adapter then failed, an interval missing the
// report's exact figure.) That rests on the
// central limit theorem for the sampled rows' e_i, helped by each row being
// a sum over thousands of elements, and on the rows' spread in the sample
// representing the rows not read: a few rare rows far from the rest (an
// outlier feature) that the sample misses are invisible to any estimator —
// a t-interval, a bootstrap or a concentration bound alike (the last would
// need a bound on a row's residual, which the weights do not give). A
// bootstrap percentile interval cannot reach a 1 − 10⁻⁴ level from 32 rows,
// and the linearised t-interval is the standard survey-sampling one, so
// this is it, checked empirically: on the demo world (rows of 64–192
// elements, so more skewed than Clef's 5,120–17,408), at 95 % all 276
// intervals of a run covered the full rebuild's figures in 56 of 60 seeds
// and 144 of 150 others — nominal, not conservative; at 99.9 % in 60 of 60
// (0 of 16,560 intervals missed; TestSampledCalibration).
//
// Judging (wasm/FORMATS.md): residual/noise above the claims' maximum and a
// rebuilt relative error above the claimed one fail (rebuild.error) only
// when the whole interval is beyond the bound; an interval that straddles
// the bound warns "not enough rows to decide"; a large matrix's interval
// wholly below the claimed minimum is info (better than claimed), as in the
// full rebuild. The extraction report's residual_to_noise and
// rebuilt_rel_error must lie in the intervals (widened by ReportTolerance),
// else report.mismatch.
package rebuild
