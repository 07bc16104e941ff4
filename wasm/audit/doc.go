// Package audit checks a PEFT LoRA adapter against its configuration, its
// extraction report and a claims profile, and turns what it finds into
// findings with stable codes (FORMATS §6).
//
// The audit reads the adapter by tensor, never whole: the header inventory
// first (pairs, halves, shapes, dtypes, layers, counts), then every pair's
// factors, decoded and scanned for NaN/Inf. Unless quick, each pair's Gram
// matrices A·Aᵀ and Bᵀ·B give the singular values of scaling·B·A, its
// numerical rank and its SVD form (package spectral), which are compared
// with the extraction report.
//
// # Tolerances
//
// The factors are bf16: 8 significant bits, a relative rounding step of 2⁻⁸.
// Rounding A and B moves each singular value of B·A by about that much at
// worst, so the report's singular values and Frobenius norms are compared
// with a relative tolerance of 2⁻⁶ (four bf16 steps; a 10 % change fails by
// a factor of six) plus an absolute floor of 2⁻¹⁰·σ₁ for values near the
// Gram's resolution. See Tolerances.
package audit
