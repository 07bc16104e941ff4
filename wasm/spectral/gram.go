package spectral

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/kvit-s/clefcheck/wasm/kernels"
)

// PanelRows is the number of rows of Xᵀ summed in float32 before the sums
// are added into the float64 Gram.
const PanelRows = 64

// PanelBlock is the width of a panel's column blocks (see Gram).
const PanelBlock = 16

// Gram accumulates G = Xᵀ·X for an n-column X fed in panels of rows.
//
// A panel is held packed, the layout the kernels read: its columns in
// blocks of PanelBlock, each block's PanelRows rows contiguous, so that
// element (t, c) — row t of the panel, column c — is at
// PanelAt(t, c) = ((c/16)·PanelRows + t)·16 + c%16. The feeders decode
// bf16 straight into it; a kernel reads it in order, with no copy.
type Gram struct {
	N      int       // the Gram is N × N
	stride int       // N rounded up to 16
	g      []float64 // stride × stride, upper triangle accumulated
	panel  []float32 // PanelRows × stride, packed, zero-padded
	rows   int       // rows filled in the current panel
}

// PanelAt is the index of element (t, c) of a packed panel.
func PanelAt(t, c int) int { return ((c>>4)*PanelRows+t)<<4 | c&15 }

// NewGram returns an empty n × n Gram.
func NewGram(n int) *Gram {
	s := (n + 15) &^ 15
	return &Gram{N: n, stride: s, g: make([]float64, s*s), panel: make([]float32, PanelRows*s)}
}

// Reset empties the Gram for reuse with the same n.
func (g *Gram) Reset() {
	clear(g.g)
	g.rows = 0
}

// AddRow adds one row of X (n values) to the panel, flushing the panel
// first when it is full.
func (g *Gram) AddRow(x []float32) {
	if g.rows == PanelRows {
		g.Flush()
	}
	t := g.rows
	for c, v := range x[:g.N] {
		g.panel[PanelAt(t, c)] = v
	}
	g.rows++
}

// NextPanel flushes what is filled and returns the packed panel for k ≤
// PanelRows rows to fill (element (t, c) at PanelAt(t, c) for t < k,
// c < N; the padding columns stay zero). They are added at the next
// NextPanel, AddRow or Sym.
func (g *Gram) NextPanel(k int) []float32 {
	g.Flush()
	g.rows = k
	return g.panel
}

// Stride is N rounded up to PanelBlock.
func (g *Gram) Stride() int { return g.stride }

// Flush adds the filled panel rows into the Gram.
func (g *Gram) Flush() {
	if g.rows == 0 {
		return
	}
	GramKernels.Get()(g.panel, g.rows, g.stride, g.g)
	g.rows = 0
}

// Diag returns diagonal entry i of the Gram accumulated so far.
func (g *Gram) Diag(i int) float64 {
	g.Flush()
	return g.g[i*g.stride+i]
}

// Sym returns the finished Gram as a symmetric matrix. It is a view of
// the Gram's own storage (its upper triangle), not a copy: valid until the
// Gram is reset or fed again. (A copy would double the largest buffers of
// the exact route; see GramMemory.)
func (g *Gram) Sym() *mat.SymDense {
	g.Flush()
	var s mat.SymDense
	if g.N == 0 {
		return mat.NewSymDense(0, nil)
	}
	s.SetRawSymmetric(blas64.Symmetric{N: g.N, Stride: g.stride, Data: g.g[:(g.N-1)*g.stride+g.N], Uplo: blas.Upper})
	return &s
}

// GramKernel adds Pᵀ·P into the upper triangle of g (stride × stride), for
// P the first k rows (k ≤ PanelRows) of a packed panel p (PanelRows ×
// stride, stride a multiple of 16; see Gram), each entry summed in float32
// over the k rows and added into g in float64. Entries below the diagonal
// may be written too; they are not read.
type GramKernel func(p []float32, k, stride int, g []float64)

// GramKernels is the slot of the Gram panel update (package kernels): the
// portable syrkPanelGo, and under GOEXPERIMENT=simd on amd64 the AVX2+FMA
// kernel "avx2" (Go assembly) and the AVX-512 one "avx512" (simd/archsimd),
// each installed at start-up when the CPU has it and CheckGramKernel
// accepts it; the last accepted is active.
var GramKernels = kernels.NewSlot[GramKernel]("gram", syrkPanelGo)

// syrkPanelGo is the portable GramKernel: tiles of 4 × 4 entries summed in
// float32 over the panel's k rows.
func syrkPanelGo(p []float32, k, stride int, g []float64) {
	for i0 := 0; i0 < stride; i0 += 4 {
		for j0 := i0 &^ 15; j0 < stride; j0 += 4 {
			if j0+4 <= i0 {
				continue // strictly below the diagonal
			}
			tile4x4(p, k, stride, i0, j0, g)
		}
	}
}

// tile4x4 sums a 4 × 4 block of Pᵀ·P in sixteen scalar accumulators.
func tile4x4(p []float32, k, stride, i0, j0 int, g []float64) {
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	pa, pb := PanelAt(0, i0), PanelAt(0, j0)
	for t := 0; t < k; t++ {
		a := p[pa+16*t : pa+16*t+4 : pa+16*t+4]
		b := p[pb+16*t : pb+16*t+4 : pb+16*t+4]
		a0, a1, a2, a3 := a[0], a[1], a[2], a[3]
		b0, b1, b2, b3 := b[0], b[1], b[2], b[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	r0 := g[i0*stride+j0 : i0*stride+j0+4 : i0*stride+j0+4]
	r1 := g[(i0+1)*stride+j0 : (i0+1)*stride+j0+4 : (i0+1)*stride+j0+4]
	r2 := g[(i0+2)*stride+j0 : (i0+2)*stride+j0+4 : (i0+2)*stride+j0+4]
	r3 := g[(i0+3)*stride+j0 : (i0+3)*stride+j0+4 : (i0+3)*stride+j0+4]
	r0[0] += float64(c00)
	r0[1] += float64(c01)
	r0[2] += float64(c02)
	r0[3] += float64(c03)
	r1[0] += float64(c10)
	r1[1] += float64(c11)
	r1[2] += float64(c12)
	r1[3] += float64(c13)
	r2[0] += float64(c20)
	r2[1] += float64(c21)
	r2[2] += float64(c22)
	r2[3] += float64(c23)
	r3[0] += float64(c30)
	r3[1] += float64(c31)
	r3[2] += float64(c32)
	r3[3] += float64(c33)
}

// Pack lays out k rows of a row-major panel (rows of stride values) as a
// packed one (PanelRows × stride), for tests and checks.
func Pack(rows []float32, k, stride int) []float32 {
	p := make([]float32, PanelRows*stride)
	for t := 0; t < k; t++ {
		for c := 0; c < stride; c++ {
			p[PanelAt(t, c)] = rows[t*stride+c]
		}
	}
	return p
}

// Kernel names the Gram kernel in use ("go" or "avx2").
//
// Deprecated: use GramKernels.Name().
func Kernel() string { return GramKernels.Name() }

// CheckGramKernel compares a Gram kernel with the portable one on panels
// of a few sizes (one row, a few, a full panel; 16 to 65 columns): of
// bf16-representable values, and, with 65 columns, of float32 values with
// all 24 bits, which a kernel that took them for bf16 (as avx512-bf16 must
// not) would truncate by up to 2⁻⁸. Every entry must agree within
// 10⁻⁶·√(Gᵢᵢ·Gⱼⱼ), far below the float32 rounding of a panel's sums
// (64·2⁻²⁴ ≈ 4·10⁻⁶ of them at worst) yet far above what a wrong kernel
// gives.
func CheckGramKernel(candidate, portable GramKernel) error {
	x := uint32(12345)
	for _, n := range []int{16, 48, 64, 65} {
		stride := n
		if n == 65 {
			stride = 80
		}
		p := make([]float32, PanelRows*stride)
		for i := range p {
			x = x*1664525 + 1013904223
			p[i] = float32(int32(x>>24)-128) / 64 // 8 significant bits: exact in bf16
			if n == 65 {
				p[i] = float32(int32(x)) / (1 << 31) // 24 bits: not a bf16
			}
		}
		for _, k := range []int{1, 7, PanelRows} {
			g1 := make([]float64, stride*stride)
			g2 := make([]float64, stride*stride)
			pk := Pack(p, k, stride)
			candidate(pk, k, stride, g1)
			portable(pk, k, stride, g2)
			for i := 0; i < n; i++ {
				for j := i; j < n; j++ {
					a, b := g1[i*stride+j], g2[i*stride+j]
					if d := math.Abs(a - b); d > 1e-6*math.Sqrt(g2[i*stride+i]*g2[j*stride+j])+1e-30 {
						return fmt.Errorf("n=%d k=%d (%d,%d): %g, the portable kernel %g", n, k, i, j, a, b)
					}
				}
			}
		}
	}
	return nil
}

// GramOfRows computes X·Xᵀ for X rows × cols row-major (e.g. A·Aᵀ), by
// feeding the columns of X as panel rows. A helper for tests and callers that
// hold X decoded.
func GramOfRows(x []float32, rows, cols int) *mat.SymDense {
	g := NewGram(rows)
	col := make([]float32, rows)
	for c := 0; c < cols; c++ {
		for i := 0; i < rows; i++ {
			col[i] = x[i*cols+c]
		}
		g.AddRow(col)
	}
	return g.Sym()
}

// GramOfCols computes Xᵀ·X for X rows × cols row-major (e.g. Bᵀ·B).
func GramOfCols(x []float32, rows, cols int) *mat.SymDense {
	g := NewGram(cols)
	for i := 0; i < rows; i++ {
		g.AddRow(x[i*cols : (i+1)*cols])
	}
	return g.Sym()
}

func sqrtPos(x float64) float64 {
	if x <= 0 {
		return 0
	}
	return math.Sqrt(x)
}
