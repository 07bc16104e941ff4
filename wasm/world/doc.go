// Package world generates the demo world: a tiny Clef-like model pair (a
// base checkpoint and a tuned one that differs from it only in the large
// matrices of layers 40–63, by a rank-r change), and the LoRA adapter
// extracted from the difference exactly as the model card's step 2 says
// (D = W_tuned − W_base, top-r SVD, A = √S·Vᵀ, B = U·√S, rounded to bf16,
// zero-padded where a side is below r), with its extraction report.
//
// The module layout is the real model's (FORMATS §1) at small dimensions:
// 64 decoder layers, full attention where L % 4 == 3, linear attention
// elsewhere, the same module names. Everything is deterministic in the seed.
//
// Full generates the 1.40 GB twin of the real adapter — the exact 186 names
// and shapes, random factors in SVD form — for benchmarks.
package world
