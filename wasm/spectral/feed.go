package spectral

import (
	"math"

	"github.com/kvit-s/clefcheck/wasm/dtype"
)

// FeedColumns feeds the columns of X (rows × cols, row-major bytes of
// dtype dt, e.g. a LoRA A with rows = r) into g as panel rows, so that g
// accumulates X·Xᵀ = Σ over columns of x_c·x_cᵀ; g must be rows × rows. It
// returns the number of non-finite values and the Gram's trace afterwards,
// which is ‖X‖²_F when g started empty. scratch is reused for dtypes other
// than BF16 (bf16 is widened inline); yield, when not nil, is called before
// each panel.
func (g *Gram) FeedColumns(dt string, b []byte, rows, cols int, scratch *[]float32, yield func() error) (nonfinite int, sumsq float64) {
	r, in := rows, cols
	if scratch == nil {
		scratch = new([]float32)
	}
	sz := dtype.Size(dt)
	stride := g.Stride()
	if cap(*scratch) < PanelRows {
		*scratch = make([]float32, PanelRows)
	}
	for c0 := 0; c0 < in; c0 += PanelRows {
		if yield != nil {
			yield()
		}
		k := min(PanelRows, in-c0)
		p := g.NextPanel(k)
		if dt == "BF16" {
			// Row t of the panel is column c0+t of A: read A's rows in
			// order, write the panel column by column.
			for i := 0; i < r; i++ {
				seg := b[(i*in+c0)*2 : (i*in+c0+k)*2]
				for t := 0; t < k; t++ {
					u := uint32(seg[2*t]) | uint32(seg[2*t+1])<<8
					if u&0x7f80 == 0x7f80 {
						nonfinite++
					}
					p[t*stride+i] = math.Float32frombits(u << 16)
				}
			}
			continue
		}
		for i := 0; i < r; i++ {
			seg := b[(i*in+c0)*sz : (i*in+c0+k)*sz]
			row := (*scratch)[:k]
			nf, _ := dtype.Decode32(dt, seg, row)
			nonfinite += nf
			for t, v := range row {
				p[t*stride+i] = v
			}
		}
	}
	for i := 0; i < r; i++ {
		sumsq += g.Diag(i) // the trace of the Gram is ‖X‖²_F
	}
	return nonfinite, sumsq
}

// FeedRows feeds the rows of X (rows × cols, row-major bytes of dtype dt,
// e.g. a LoRA B with cols = r) into g, so that g accumulates Xᵀ·X = Σ over
// rows of x_iᵀ·x_i; g must be cols × cols. It returns what FeedColumns
// does.
func (g *Gram) FeedRows(dt string, b []byte, rows, cols int, yield func() error) (nonfinite int, sumsq float64) {
	out, r := rows, cols
	sz := dtype.Size(dt)
	stride := g.Stride()
	for i0 := 0; i0 < out; i0 += PanelRows {
		if yield != nil {
			yield()
		}
		k := min(PanelRows, out-i0)
		p := g.NextPanel(k)
		for t := 0; t < k; t++ {
			seg := b[(i0+t)*r*sz : (i0+t+1)*r*sz]
			row := p[t*stride : t*stride+r]
			var nf int
			if dt == "BF16" {
				for j := range row {
					u := uint32(seg[2*j]) | uint32(seg[2*j+1])<<8
					if u&0x7f80 == 0x7f80 {
						nf++
					}
					row[j] = math.Float32frombits(u << 16)
				}
			} else {
				nf, _ = dtype.Decode32(dt, seg, row)
			}
			nonfinite += nf
		}
	}
	for i := 0; i < r; i++ {
		sumsq += g.Diag(i) // the trace of the Gram is ‖X‖²_F
	}
	return nonfinite, sumsq
}
