package rebuild

import (
	"fmt"
	"io/fs"
	"math"
	"sort"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/peft"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// Block is report.Block.
type Block = report.Block

// Pairs lists the modules of an adapter that have both factors, sorted.
func Pairs(ck *safetensors.Checkpoint) map[string][2]string {
	out := map[string][2]string{}
	for _, name := range ck.Names() {
		k := peft.ParseKey(name)
		if k.Kind != peft.KindLoRA {
			continue
		}
		p := out[k.Module]
		if k.Half == peft.HalfA {
			p[0] = name
		} else {
			p[1] = name
		}
		out[k.Module] = p
	}
	for m, p := range out {
		if p[0] == "" || p[1] == "" {
			delete(out, m)
		}
	}
	return out
}

// Modules is Pairs' keys, sorted.
func Modules(ck *safetensors.Checkpoint) []string {
	var out []string
	for m := range Pairs(ck) {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Sample computes rows [row0, row0+rows) × columns [col0, col0+cols) of
// s·B·A for module, reading only B's rows of the block and A (r × in) by
// range. The adapter's config gives s (1 without a config).
func Sample(adapter fs.FS, ck *safetensors.Checkpoint, module string, row0, rows, col0, cols int) (*Block, error) {
	p, ok := Pairs(ck)[module]
	if !ok {
		return nil, fmt.Errorf("no lora_A/lora_B pair for %s", module)
	}
	ta, ra, _ := ck.Tensor(p[0])
	tb, rb, _ := ck.Tensor(p[1])
	if len(ta.Shape) != 2 || len(tb.Shape) != 2 || ta.Shape[0] != tb.Shape[1] || !dtype.Decodable(ta.DType) || !dtype.Decodable(tb.DType) {
		return nil, fmt.Errorf("%s: factors %s %v and %s %v do not make a product", module, ta.DType, ta.Shape, tb.DType, tb.Shape)
	}
	r, in, out := int(ta.Shape[0]), int(ta.Shape[1]), int(tb.Shape[0])
	if rows <= 0 || cols <= 0 || rows > 256 || cols > 256 {
		return nil, fmt.Errorf("a block is 1–256 rows by 1–256 columns")
	}
	if r == 0 || out == 0 || in == 0 {
		return nil, fmt.Errorf("%s: factors %v and %v have no elements: nothing to sample", module, ta.Shape, tb.Shape)
	}
	if r > maxSampleRank {
		return nil, &report.Error{Code: report.LimitExceeded, Subject: module, Msg: fmt.Sprintf("r = %d is above the %d a sample reads (rebuild.maxSampleRank)", r, maxSampleRank)}
	}
	row0 = max(0, min(row0, out-1))
	col0 = max(0, min(col0, in-1))
	rows, cols = min(rows, out-row0), min(cols, in-col0)
	s := 1.0
	if cfg, err := peft.ReadConfig(adapter, "adapter_config.json"); err == nil {
		s = cfg.Scaling(module)
	}
	szB := int64(dtype.Size(tb.DType))
	rawB, err := rb.ReadRange(tb, int64(row0*r)*szB, int64((row0+rows)*r)*szB, nil)
	if err != nil {
		return nil, err
	}
	B := make([]float64, rows*r)
	if _, err := dtype.Decode64(tb.DType, rawB, B); err != nil {
		return nil, err
	}
	// A's columns [col0, col0+cols): one range per row of A.
	szA := int64(dtype.Size(ta.DType))
	A := make([]float64, r*cols)
	var raw []byte
	for i := 0; i < r; i++ {
		off := int64(i*in+col0) * szA
		if raw, err = ra.ReadRange(ta, off, off+int64(cols)*szA, raw); err != nil {
			return nil, err
		}
		if _, err := dtype.Decode64(ta.DType, raw, A[i*cols:(i+1)*cols]); err != nil {
			return nil, err
		}
	}
	blk := &Block{Module: module, Out: out, In: in, Row0: row0, Col0: col0, Rows: rows, Cols: cols, Scaling: s, Values: make([]float64, rows*cols), Min: math.Inf(1), Max: math.Inf(-1)}
	var sum, ss float64
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			var v float64
			for k := 0; k < r; k++ {
				v += B[i*r+k] * A[k*cols+j]
			}
			v *= s
			blk.Values[i*cols+j] = v
			blk.Min, blk.Max = math.Min(blk.Min, v), math.Max(blk.Max, v)
			sum += v
			ss += v * v
		}
	}
	n := float64(rows * cols)
	blk.Mean, blk.RMS = sum/n, math.Sqrt(ss/n)
	// NaN or ±Inf factors (or a scaling that overflows) give values JSON
	// cannot hold: they are refused, with how many there were.
	bad := 0
	for _, v := range append(blk.Values, blk.Mean, blk.RMS, blk.Min, blk.Max) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad++
		}
	}
	if bad > 0 {
		return nil, &report.Error{Code: report.ValuesNonfinite, Subject: module, Msg: fmt.Sprintf("the block of s·B·A holds %d values that are not finite: the factors hold NaN or infinite values, or the scaling %.3g overflows", bad, s)}
	}
	return blk, nil
}

// maxSampleRank bounds the r of a sampled pair: A's columns of a block are
// read whole (r × 256 float64 at most, 64 MB at this r).
const maxSampleRank = 1 << 15
