package audit

import (
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// How a pair's factors are read. A pair whose factors hold at most
// WholeReadBytes together is read whole, one read per factor (what a
// remote source serves best; every pair of Clef's adapter is below 20 MB).
// Larger factors are streamed in chunks of about StreamChunk bytes: the
// scan by runs of elements, Bᵀ·B by runs of rows, A·Aᵀ by strips of
// columns (one read per row of A and strip). So a worker holds at most
// WholeReadBytes of factor bytes, however large a tensor its header
// declares — a sparse 4 GiB tensor costs 4 GiB of reading, not of memory.
const (
	WholeReadBytes = 32 << 20
	StreamChunk    = 8 << 20
	// MaxProbeDecode bounds the float32 copies of both factors the
	// randomized probes work on; a larger pair gets the exact Grams
	// (which stream) instead.
	MaxProbeDecode = 128 << 20
)

// streamer reads one factor in chunks into a worker's reusable buffer.
type streamer struct {
	rd  *safetensors.Reader
	t   safetensors.TensorInfo
	buf *[]byte
	add func(int64) // bytes read, for progress
	// chunk, when positive, is the size of scan's reads (Options.ReadChunk).
	chunk int64
}

func (s streamer) read(from, to int64) ([]byte, error) {
	b, err := s.rd.ReadRange(s.t, from, to, *s.buf)
	*s.buf = b
	if err == nil && s.add != nil {
		s.add(to - from)
	}
	return b, err
}

// viewPair is both whole factors' bytes without a copy, when their source
// holds them in memory (safetensors.Reader.View): ok only when both are,
// and their bytes are then counted as read.
func viewPair(sa, sb streamer) (a, b []byte, ok bool) {
	a, okA := sa.rd.View(sa.t, 0, sa.t.Bytes())
	b, okB := sb.rd.View(sb.t, 0, sb.t.Bytes())
	if !okA || !okB {
		return nil, nil, false
	}
	for _, s := range []streamer{sa, sb} {
		if s.add != nil {
			s.add(s.t.Bytes())
		}
	}
	return a, b, true
}

// scan is dtype.Scan over the factor, chunk by chunk.
func (s streamer) scan(row *[]float32) (nonfinite int, sumsq float64, err error) {
	sz := int64(dtype.Size(s.t.DType))
	chunk := int64(StreamChunk)
	if s.chunk > 0 {
		chunk = s.chunk
	}
	step := max(sz, chunk/sz*sz)
	for off := int64(0); off < s.t.Bytes(); off += step {
		b, err := s.read(off, min(off+step, s.t.Bytes()))
		if err != nil {
			return 0, 0, err
		}
		nf, ss := dtype.Scan(s.t.DType, b, row)
		nonfinite += nf
		sumsq += ss
	}
	return nonfinite, sumsq, nil
}

// decode decodes the whole factor into dst (len = its element count).
func (s streamer) decode(dst []float32) (nonfinite int, err error) {
	sz := int64(dtype.Size(s.t.DType))
	step := max(sz, StreamChunk/sz*sz)
	for off := int64(0); off < s.t.Bytes(); off += step {
		b, err := s.read(off, min(off+step, s.t.Bytes()))
		if err != nil {
			return 0, err
		}
		nf, err := dtype.Decode32(s.t.DType, b, dst[off/sz:])
		if err != nil {
			return 0, err
		}
		nonfinite += nf
	}
	return nonfinite, nil
}

// feedRows feeds the rows of the factor (rows × cols) into g by runs of
// whole rows (spectral.Gram.FeedRows on each run).
func (s streamer) feedRows(g *spectral.Gram, rows, cols int, yield func() error) (nonfinite int, sumsq float64, err error) {
	rowBytes := int64(cols * dtype.Size(s.t.DType))
	per := max(1, StreamChunk/max(1, rowBytes))
	for i0 := int64(0); i0 < int64(rows); i0 += per {
		k := min(per, int64(rows)-i0)
		b, err := s.read(i0*rowBytes, (i0+k)*rowBytes)
		if err != nil {
			return 0, 0, err
		}
		nf, ss := g.FeedRows(s.t.DType, b, int(k), cols, yield)
		nonfinite += nf
		sumsq = ss // the Gram's trace so far
	}
	return nonfinite, sumsq, nil
}

// feedColumns feeds the columns of the factor (rows × cols) into g by
// strips of columns, each strip gathered row by row into the buffer as a
// rows × width matrix (spectral.Gram.FeedColumns on each strip).
func (s streamer) feedColumns(g *spectral.Gram, rows, cols int, scratch *[]float32, yield func() error) (nonfinite int, sumsq float64, err error) {
	sz := int64(dtype.Size(s.t.DType))
	width := max(int64(spectral.PanelRows), StreamChunk/(int64(rows)*sz)/spectral.PanelRows*spectral.PanelRows)
	err = s.strips(rows, cols, width, nil, func(strip []byte, k int) error {
		if s.add != nil {
			s.add(int64(len(strip)))
		}
		nf, ss := g.FeedColumns(s.t.DType, strip, rows, k, scratch, yield)
		nonfinite += nf
		sumsq = ss
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return nonfinite, sumsq, nil
}

// strips gathers the factor (rows × cols) by strips of width columns, each
// a rows × k matrix (k = width but for the last), row by row: read from
// the source, or copied from whole when the factor's bytes are at hand.
func (s streamer) strips(rows, cols int, width int64, whole []byte, each func(strip []byte, k int) error) error {
	sz := int64(dtype.Size(s.t.DType))
	strip := make([]byte, 0, int64(rows)*min(width, int64(cols))*sz)
	for c0 := int64(0); c0 < int64(cols); c0 += width {
		k := min(width, int64(cols)-c0)
		strip = strip[:int64(rows)*k*sz]
		for i := int64(0); i < int64(rows); i++ {
			at := (i*int64(cols) + c0) * sz
			dst := strip[i*k*sz : (i+1)*k*sz]
			if whole != nil {
				copy(dst, whole[at:at+k*sz])
			} else if _, err := s.rd.ReadRange(s.t, at, at+k*sz, dst[:0:len(dst)]); err != nil {
				return err
			}
		}
		if err := each(strip, int(k)); err != nil {
			return err
		}
	}
	return nil
}

// feedWide feeds the factor (rows × cols) into g once more, from empty,
// in float64 (spectral.Gram.AddWide): the route for a factor whose float32
// Gram overflowed (its trace +Inf with no value non-finite). With columns,
// g accumulates X·Xᵀ (a LoRA A) from strips of columns, otherwise Xᵀ·X (a
// LoRA B) from runs of rows. whole is the factor's bytes when they were
// read whole (nil when streamed: they are read again, in chunks of about
// StreamChunk/4 bytes, whose float64 copies are then StreamChunk).
func (s streamer) feedWide(g *spectral.Gram, rows, cols int, columns bool, whole []byte) (sumsq float64, err error) {
	g.Reset()
	sz := int64(dtype.Size(s.t.DType))
	var f32 []float32
	var f64 []float64
	add := func(b []byte, r, c int) error {
		n := r * c
		if cap(f32) < n {
			f32, f64 = make([]float32, n), make([]float64, n)
		}
		f32, f64 = f32[:n], f64[:n]
		if _, err := dtype.Decode32(s.t.DType, b, f32); err != nil {
			return err
		}
		for i, v := range f32 {
			f64[i] = float64(v)
		}
		g.AddWide(f64, r, c, columns)
		return nil
	}
	budget := int64(StreamChunk / 4)
	if !columns {
		rowBytes := int64(cols) * sz
		per := max(1, budget/max(1, rowBytes))
		for i0 := int64(0); i0 < int64(rows); i0 += per {
			k := min(per, int64(rows)-i0)
			var b []byte
			if whole != nil {
				b = whole[i0*rowBytes : (i0+k)*rowBytes]
			} else if b, err = s.rd.ReadRange(s.t, i0*rowBytes, (i0+k)*rowBytes, *s.buf); err != nil {
				return 0, err
			} else {
				*s.buf = b // read again: not counted as progress
			}
			if err := add(b, int(k), cols); err != nil {
				return 0, err
			}
		}
		return g.Trace(), nil
	}
	width := max(1, budget/max(1, int64(rows)*sz))
	if err := s.strips(rows, cols, width, whole, func(strip []byte, k int) error { return add(strip, rows, k) }); err != nil {
		return 0, err
	}
	return g.Trace(), nil
}

// rescan is the factor's Σx² from its bytes (whole), or read again by
// scan when streamed: dtype.Scan takes in float64 what float32 cannot.
func (s streamer) rescan(whole []byte, row *[]float32) (sumsq float64, err error) {
	if whole != nil {
		_, sumsq = dtype.Scan(s.t.DType, whole, row)
		return sumsq, nil
	}
	s.add = nil // read again: not counted as progress (s is a copy)
	_, sumsq, err = s.scan(row)
	return sumsq, err
}
