package spectral

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/kernels"
)

// FeedColumns feeds the columns of X (rows × cols, row-major bytes of
// dtype dt, e.g. a LoRA A with rows = r) into g as panel rows, so that g
// accumulates X·Xᵀ = Σ over columns of x_c·x_cᵀ; g must be rows × rows. It
// returns the number of non-finite values and the Gram's trace afterwards,
// which is ‖X‖²_F when g started empty. scratch is reused for dtypes other
// than BF16 (bf16 is widened straight into the packed panel: a shift,
// exact); yield, when not nil, is called before each panel.
func (g *Gram) FeedColumns(dt string, b []byte, rows, cols int, scratch *[]float32, yield func() error) (nonfinite int, sumsq float64) {
	r, in := rows, cols
	if scratch == nil {
		scratch = new([]float32)
	}
	sz := dtype.Size(dt)
	if cap(*scratch) < PanelRows {
		*scratch = make([]float32, PanelRows)
	}
	colk := ColumnKernels.Get()
	for c0 := 0; c0 < in; c0 += PanelRows {
		if yield != nil {
			yield()
		}
		k := min(PanelRows, in-c0)
		p := g.NextPanel(k)
		if dt == "BF16" {
			// Row t of the panel is column c0+t of X: the r × k block of X
			// at column c0 goes into the panel transposed.
			nonfinite += colk(b[c0*2:], in*2, p, r, k)
			continue
		}
		for i := 0; i < r; i++ {
			base := PanelAt(0, i)
			dst := p[base : base+16*(k-1)+1]
			row := (*scratch)[:k]
			nf, _ := dtype.Decode32(dt, b[(i*in+c0)*sz:(i*in+c0+k)*sz], row)
			nonfinite += nf
			for t, v := range row {
				dst[16*t] = v
			}
		}
	}
	for i := 0; i < r; i++ {
		sumsq += g.Diag(i) // the trace of the Gram is ‖X‖²_F
	}
	return nonfinite, sumsq
}

// RowKernel widens k ≤ PanelRows rows of n bf16 values (row t at
// src[t·pitch:]) into rows 0 … k−1 of the packed panel p — value (t, c) to
// p[PanelAt(t, c)] — and counts the non-finite ones: B's rows as panel
// rows, for Bᵀ·B. A whole panel per call: in the browser the kernel is a
// call into a WebAssembly module, too dear for one row.
type RowKernel func(src []byte, pitch int, p []float32, k, n int) (nonfinite int)

// RowKernels is the slot of the row decode (package kernels): the portable
// bf16RowsGo, under GOEXPERIMENT=simd on amd64 with AVX2 "avx2", in the
// browser "wasm-simd", each installed at start-up when CheckRowKernel
// accepts it.
var RowKernels = kernels.NewSlot[RowKernel]("bf16-rows", bf16RowsGo)

// bf16RowsGo is the portable RowKernel.
func bf16RowsGo(src []byte, pitch int, p []float32, k, n int) (nonfinite int) {
	for t := 0; t < k; t++ {
		nonfinite += bf16RowGo(src[t*pitch:t*pitch+2*n], p, t, n)
	}
	return nonfinite
}

// bf16RowGo widens one row (n values) into panel row t.
func bf16RowGo(src []byte, p []float32, t, n int) (nonfinite int) {
	src = src[:2*n]
	for c0 := 0; c0 < n; c0 += PanelBlock {
		w := min(PanelBlock, n-c0)
		at := PanelAt(t, c0)
		dst := p[at : at+w]
		seg := src[2*c0 : 2*(c0+w)]
		for j := range dst {
			u := uint32(binary.LittleEndian.Uint16(seg[2*j:]))
			nonfinite += int(((u & 0x7f80) + 0x80) >> 15)
			dst[j] = math.Float32frombits(u << 16)
		}
	}
	return nonfinite
}

// CheckRowKernel compares a RowKernel with the portable one on panels of
// 1, 3, 5 and 64 rows with NaN and ±Inf, rows of lengths that are and are
// not multiples of 16, pitches longer than a row: every value of the
// panel bit for bit, the count exactly.
func CheckRowKernel(candidate, portable RowKernel) error {
	x := uint32(999)
	for _, n := range []int{16, 48, 256, 40, 7} {
		for _, k := range []int{1, 3, 5, PanelRows} {
			pitch := 2*n + 2*(k%3)
			src := make([]byte, (k-1)*pitch+2*n)
			for i := range src {
				x = x*1664525 + 1013904223
				src[i] = byte(x >> 24)
			}
			for i := 0; i+1 < len(src); i += 22 {
				src[i], src[i+1] = 0x80, 0xff // −Inf or NaN, now and then
			}
			stride := (n + 15) &^ 15
			p1, p2 := make([]float32, PanelRows*stride), make([]float32, PanelRows*stride)
			n1, n2 := candidate(src, pitch, p1, k, n), portable(src, pitch, p2, k, n)
			if n1 != n2 {
				return fmt.Errorf("%d rows of %d values: %d non-finite, the portable loop %d", k, n, n1, n2)
			}
			for i := range p1 {
				if math.Float32bits(p1[i]) != math.Float32bits(p2[i]) {
					return fmt.Errorf("%d rows of %d values: panel value %d is %#x, the portable loop's %#x", k, n, i, math.Float32bits(p1[i]), math.Float32bits(p2[i]))
				}
			}
		}
	}
	return nil
}

// ColumnKernel widens a rows × k block of bf16 values (row u at src[u·pitch:],
// k ≤ PanelRows values) into the packed panel p transposed — value (u, t)
// to p[PanelAt(t, u)] — and counts the non-finite ones: A's columns as
// panel rows, for A·Aᵀ.
type ColumnKernel func(src []byte, pitch int, p []float32, rows, k int) (nonfinite int)

// ColumnKernels is the slot of the transposing bf16 decode (package
// kernels): the portable bf16ColumnsGo, and under GOEXPERIMENT=simd on
// amd64 with AVX2 "avx2" (8 × 8 transposes in registers), installed at
// start-up when CheckColumnKernel accepts it.
var ColumnKernels = kernels.NewSlot[ColumnKernel]("bf16-columns", bf16ColumnsGo)

// bf16ColumnsGo is the portable ColumnKernel.
func bf16ColumnsGo(src []byte, pitch int, p []float32, rows, k int) (nonfinite int) {
	if k == 0 {
		return 0
	}
	for u := 0; u < rows; u++ {
		base := PanelAt(0, u)
		nonfinite += bf16Column(src[u*pitch:u*pitch+2*k], p[base:base+16*(k-1)+1])
	}
	return nonfinite
}

// CheckColumnKernel compares a ColumnKernel with the portable one on blocks
// with NaN and ±Inf of awkward shapes (rows and columns not multiples of
// 8): every value bit for bit, the count exactly.
func CheckColumnKernel(candidate, portable ColumnKernel) error {
	x := uint32(777)
	for _, sh := range [][2]int{{8, 8}, {16, 64}, {13, 61}, {256, 64}, {37, 5}, {1, 64}} {
		rows, k := sh[0], sh[1]
		pitch := 2*k + 6
		src := make([]byte, rows*pitch)
		for i := range src {
			x = x*1664525 + 1013904223
			src[i] = byte(x >> 24)
		}
		for i := 0; i+1 < len(src); i += 97 {
			src[i], src[i+1] = 0x80, 0x7f // +Inf or NaN, now and then
		}
		stride := (rows + 15) &^ 15
		p1, p2 := make([]float32, PanelRows*stride), make([]float32, PanelRows*stride)
		n1, n2 := candidate(src, pitch, p1, rows, k), portable(src, pitch, p2, rows, k)
		if n1 != n2 {
			return fmt.Errorf("%d × %d: %d non-finite, the portable loop %d", rows, k, n1, n2)
		}
		for i := range p1 {
			if math.Float32bits(p1[i]) != math.Float32bits(p2[i]) {
				return fmt.Errorf("%d × %d: panel value %d is %#x, the portable loop's %#x", rows, k, i, math.Float32bits(p1[i]), math.Float32bits(p2[i]))
			}
		}
	}
	return nil
}

// bf16Column widens the len(src)/2 bf16 values of src into dst[0],
// dst[16], dst[32], … and counts the non-finite ones (exponent all ones:
// ((u & 0x7f80) + 0x80) carries into bit 15 exactly then).
func bf16Column(src []byte, dst []float32) (nonfinite int) {
	n := len(src) / 2
	if n == 0 {
		return 0
	}
	_ = dst[16*(n-1)]
	for t := 0; t < n; t++ {
		u := uint32(binary.LittleEndian.Uint16(src[2*t:]))
		nonfinite += int(((u & 0x7f80) + 0x80) >> 15)
		dst[16*t] = math.Float32frombits(u << 16)
	}
	return nonfinite
}

// FeedRows feeds the rows of X (rows × cols, row-major bytes of dtype dt,
// e.g. a LoRA B with cols = r) into g, so that g accumulates Xᵀ·X = Σ over
// rows of x_iᵀ·x_i; g must be cols × cols. It returns what FeedColumns
// does. Each row is decoded straight into the packed panel, 16 values to a
// block (dtype.Decode32, whose bf16 loop is a swappable kernel).
func (g *Gram) FeedRows(dt string, b []byte, rows, cols int, yield func() error) (nonfinite int, sumsq float64) {
	out, r := rows, cols
	sz := dtype.Size(dt)
	rowk := RowKernels.Get()
	for i0 := 0; i0 < out; i0 += PanelRows {
		if yield != nil {
			yield()
		}
		k := min(PanelRows, out-i0)
		p := g.NextPanel(k)
		if dt == "BF16" {
			nonfinite += rowk(b[i0*r*2:(i0+k)*r*2], r*2, p, k, r)
			continue
		}
		for t := 0; t < k; t++ {
			seg := b[(i0+t)*r*sz : (i0+t+1)*r*sz]
			for c0 := 0; c0 < r; c0 += PanelBlock {
				w := min(PanelBlock, r-c0)
				at := PanelAt(t, c0)
				nf, _ := dtype.Decode32(dt, seg[c0*sz:(c0+w)*sz], p[at:at+w])
				nonfinite += nf
			}
		}
	}
	for i := 0; i < r; i++ {
		sumsq += g.Diag(i) // the trace of the Gram is ‖X‖²_F
	}
	return nonfinite, sumsq
}
