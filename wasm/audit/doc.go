// Package audit checks a PEFT LoRA adapter against its configuration, its
// extraction report and a claims profile, and turns what it finds into
// findings with stable codes (FORMATS §6).
//
// # Phases
//
// The audit reads the adapter by tensor, never whole, in this order:
//
//  1. inventory: adapter_config.json (peft.ReadConfig), the checkpoint's
//     headers (one file or shards), the extraction report and the claims;
//     then pairs, halves, shapes, dtypes, layers and counts, against what
//     the claims (or the report, or else the tensors themselves) expect.
//     Options.OnInventory sees this before any value is read.
//  2. values: every pair's factors, read and checked by Options.Workers
//     goroutines, or by Options.Remote elsewhere (the browser's Web Workers
//     each hold a Session; Job, Figures and Segments are that protocol).
//     ModeQuick scans for NaN/Inf and takes the norms (dtype.Scan).
//     ModeExact feeds each pair's Gram matrices A·Aᵀ and Bᵀ·B
//     (spectral.Gram.FeedColumns, FeedRows) and takes from them the
//     singular values of scaling·B·A, its numerical rank and its SVD form
//     (package spectral). ModeRandomized checks the SVD form with Gaussian
//     probes (spectral.Probe) and takes the singular values from the
//     factor norms when the probes establish it; the pairs they reject get
//     exact Grams.
//  3. report: the figures against extraction-report.json (rank, dtypes,
//     counts, shapes, spectra, norms) and the report's own fidelity figures
//     against the claims.
//
// Errors of the readers become findings through FindingsOf (package
// audit/findings): a malformed safetensors header is header.invalid, a
// broken layout data.layout, a missing or truncated file file.unreadable.
// Summary.Kernel names the kernels the mode computed with, as package
// kernels has them active ("scan go", "probes wasm-simd, grams go", "avx2").
//
// # Bounds
//
// Nothing checked is not a pass: an adapter with no LoRA pair fails
// (pair.missing), in every mode, and so does a pair with a factor that
// has no elements (shape.mismatch; its r × r Grams would be justified by
// no byte of the file). The exact route takes a pair only when
// spectral.GramAllowed does (r ≤ spectral.MaxGramRank, the Grams' memory
// within what the factors' bytes justify); beyond, the pair's values are
// scanned and a limit.exceeded finding says its spectrum was not checked.
// Pairs larger than WholeReadBytes are streamed by chunks of StreamChunk,
// and the probes decode at most MaxProbeDecode (larger pairs get the
// streamed Grams). Findings of one code are listed up to MaxListed (extra
// tensors) or MaxFindingsPerCode, the rest counted. Figures that are not
// finite (a huge lora_alpha overflowing the spectrum) are −1 with a
// values.nonfinite finding, never NaN or Inf in the JSON.
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
