// Package spectral computes the spectrum of a LoRA update ΔW = s·B·A from its
// factors without forming the out × in product.
//
// # Gram matrices
//
// For A (r × in) and B (out × r) the r × r Gram matrices Ga = A·Aᵀ and
// Gb = Bᵀ·B cost O(r²·(in+out)). They are accumulated from panels of at most
// 64 rows of Xᵀ (columns of A, rows of B): each panel's products are summed in
// float32 — bf16 factors have 8-bit significands, so every product is exact in
// float32 and only the at most 64 additions round — and each panel's sums are
// added into a float64 matrix. An entry's relative error is thus about
// 64·2⁻²⁴ ≈ 4·10⁻⁶ in the worst case and far less in practice.
//
// # Singular values
//
// The non-zero singular values of B·A are the square roots of the
// eigenvalues of Gb·Ga. Any C with CᵀC = Ga gives eig(C·Gb·Cᵀ) = eig(Gb·Ga),
// and C·Gb·Cᵀ is symmetric. C comes from a Cholesky factorisation with
// complete pivoting (LAPACK's dpstrf, in gonum), which also handles a
// singular Ga (a factor zero-padded where a side is below r); the σᵢ²/s² are
// then the eigenvalues of a k × k symmetric matrix (dsyev, values only).
// Everything after the Grams is O(r³) in float64.
//
// # The range of float32
//
// The panels' float32 sums hold any product of bf16 factors of ordinary
// size, but bf16 has float32's exponent range: a value of 1.8·10¹⁹ or more
// squares past float32's largest number, and one below 2⁻⁶³ squares into
// its subnormals. Such a factor's Gram trace comes back +Inf, or tiny
// (dtype.Wide says which is which), and the audit feeds that factor again
// through Gram.AddWide, in float64 (gonum's dsyrk), where no bf16 product
// overflows or underflows (see wide.go). A factor whose every value is
// below 2⁻⁶³ still reads as zero.
//
// # Feeding encoded factors
//
// Gram.FeedColumns and Gram.FeedRows take a factor's bytes as stored and
// decode them straight into the Gram's packed panel (blocks of 16 columns,
// each block's 64 rows contiguous: the layout the kernels read, so the
// bytes are copied once, from the page cache by pread, and then only
// widened): the rows of B for Bᵀ·B a panel at a time (RowKernels), the
// columns of A for A·Aᵀ transposed (ColumnKernels),
// other dtypes through dtype.Decode32. They count the non-finite values
// they meet and return the Gram's trace, ‖X‖²_F, so that one pass over the
// bytes gives the scan and the Gram.
//
// # Kernels
//
// Four loops are swappable through package kernels, each candidate
// checked against the portable loop before it is installed: GramKernels,
// the panel update Pᵀ·P (portable Go; built with GOEXPERIMENT=simd on
// amd64, "avx2" in Go assembly, 6 × 16 tiles in twelve FMA accumulators
// (and a 4 × 16 one for the last rows of each block of 16), and "avx512"
// in Go assembly, one 16 × 16 tile per block pair in sixteen 16-lane
// accumulators with the broadcast in the FMA, both taking the panel block
// by block so that the two blocks a tile reads stay in L1, and
// "avx512-bf16" (AVX512_BF16), the same tiles from the panel packed again
// in pairs of rows as bf16, each VDPBF16PS adding two rows' exact
// products, for panels whose values are all bf16 in [2⁻⁴⁰, 2⁶⁰) or zero
// (others go to "avx512": see gram_bf16_simd.go); each chosen at
// start-up when the CPU has it and CheckGramKernel accepts it, the last
// accepted active); ColumnKernels, the transposing bf16 decode of A's
// columns (portable Go; "avx2", 8 × 8 transposes in registers; the
// browser's "wasm-simd", 4 × 4 transposes; accepted by CheckColumnKernel
// bit for bit); RowKernels, the row decode of B (portable Go; "avx2";
// "wasm-simd"; CheckRowKernel, bit for bit); and ProbeKernels, the loops of the
// randomized probes with four probes (portable Go; the browser's engine
// workers install WebAssembly SIMD ones after checking them against
// ApplyPortable and its siblings). Every Gram kernel sums the same float32
// products, in its own order: results agree within the panel bound above
// (TestKernelsAgree and TestSIMDKernelsAgainstEachOther ask
// 10⁻⁶·√(Gᵢᵢ·Gⱼⱼ)).
//
// # The diagonal shortcut
//
// For factors in SVD form the Grams are diagonal, and DiagonalSpectrum
// reads the spectrum from their diagonals with a rigorous bound
// (Gershgorin's theorem on the normalised off-diagonal parts, then
// Ostrowski's; see diagonal.go): the exact route takes it when the bound is
// within DiagonalTolerance = 2⁻⁸ and runs the eigensolver otherwise.
//
// Because the Grams square the singular values, a value below about
// √(10⁻⁶) = 10⁻³ of σ₁ is not resolved. The numerical rank therefore counts
// σᵢ above σ₁·max(max(out, in)·2⁻²³, 2⁻¹⁰) — NumPy's matrix_rank threshold
// for float32 data (2·10⁻³ for 17408 × 5120), floored at the Gram's
// resolution — and never more than min(r, out, in). An exactly zero direction
// (a zero row of A or column of B) stays exactly zero.
//
// # SVD form
//
// An adapter extracted as the model card describes has A = √S·Vᵀ and
// B = U·√S, so Ga = Gb = S, one diagonal matrix. FormDeviation measures the
// largest normalised off-diagonal entry |Gᵢⱼ|/√(Gᵢᵢ·Gⱼⱼ) of either Gram and
// the largest relative difference of their diagonals. Rounding the factors
// to bf16 perturbs each element by at most 2⁻⁸ relatively, and an inner
// product of n such elements averages that to a few 2⁻⁹/√n, so a genuine
// factorisation scores under 10⁻³ when the factors' long side has
// thousands of entries, and a few 10⁻³ when it has six (the demo world's
// in_proj_a); the threshold FormTolerance = 2⁻⁶
// leaves a wide margin, while factors not in SVD form (a trained LoRA's A is
// not orthogonal) score O(1/√r) or more.
package spectral
