package world

import (
	"bufio"
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// orthoCols gives n orthonormal columns of an m × m orthogonal matrix
// without forming it: M = D·(Q ⊗ H), with m = p·2ᵉ, Q a random p × p
// orthogonal matrix, H the normalised Sylvester–Hadamard matrix of order 2ᵉ
// and D random signs; n distinct columns are picked at random. Entry (i, k)
// costs O(1), so the 1.40 GB twin is written in seconds.
type orthoCols struct {
	p, e  int
	q     *mat.Dense
	sign  []float64
	cols  []int // chosen column of M for each k
	scale float64
}

func newOrthoCols(rng *rand.Rand, m, n int) *orthoCols {
	e := bits.TrailingZeros(uint(m))
	p := m >> e
	o := &orthoCols{p: p, e: e, sign: make([]float64, m), scale: 1 / math.Sqrt(float64(int(1)<<e))}
	g := mat.NewDense(p, p, nil)
	for i := 0; i < p; i++ {
		for j := 0; j < p; j++ {
			g.Set(i, j, rng.NormFloat64())
		}
	}
	var qr mat.QR
	qr.Factorize(g)
	o.q = mat.NewDense(p, p, nil)
	qr.QTo(o.q)
	for i := range o.sign {
		o.sign[i] = 1
		if rng.IntN(2) == 1 {
			o.sign[i] = -1
		}
	}
	o.cols = rng.Perm(m)[:min(n, m)]
	return o
}

// at is entry (i, k) of the chosen columns.
func (o *orthoCols) at(i, k int) float64 {
	c := o.cols[k]
	mask := 1<<o.e - 1
	a, b := i>>o.e, i&mask
	cc, d := c>>o.e, c&mask
	h := o.scale
	if bits.OnesCount(uint(b&d))&1 == 1 {
		h = -h
	}
	return o.sign[i] * o.q.At(a, cc) * h
}

// Full writes the full-size twin of kvit-s/clef-lora-r256 into
// dir/adapter: adapter_config.json, adapter_model.safetensors (the 186
// pairs of the claims profile, bf16, A = √S·Vᵀ and B = U·√S with
// orthonormal U and V) and extraction-report.json whose singular values are
// the S used. The twin has no checkpoints behind it, so its report carries
// no rebuild figures. It returns the bytes of factor data written.
func Full(dir string, seed uint64) (int64, error) { return FullLayers(dir, seed, 0) }

// FullLayers is Full with the pairs of only the first layers decoder
// layers (all when layers ≤ 0): a twin of a few hundred MB whose pairs,
// shapes and report are those of the real adapter's first layers, for
// tests that need many range reads of one file without the whole 1.40 GB.
// It fails the clef-lora-r256 claims (pairs are missing); without claims
// the report's pairs are the expectations, and it passes.
func FullLayers(dir string, seed uint64, layers int) (int64, error) {
	p, err := claims.Builtin("clef-lora-r256")
	if err != nil {
		return 0, err
	}
	ad := filepath.Join(dir, AdapterDir)
	if err := os.MkdirAll(ad, 0o755); err != nil {
		return 0, err
	}
	pairs := p.Pairs()
	if layers > 0 {
		first := pairs[0].Layer
		for _, pr := range pairs {
			first = min(first, pr.Layer)
		}
		kept := pairs[:0:0]
		for _, pr := range pairs {
			if pr.Layer < first+layers {
				kept = append(kept, pr)
			}
		}
		pairs = kept
	}
	r := p.Rank
	var specs []safetensors.Spec
	for _, pr := range pairs {
		specs = append(specs,
			safetensors.Spec{Name: "base_model.model." + pr.Module + ".lora_A.weight", DType: "BF16", Shape: []int64{int64(r), int64(pr.In)}},
			safetensors.Spec{Name: "base_model.model." + pr.Module + ".lora_B.weight", DType: "BF16", Shape: []int64{int64(pr.Out), int64(r)}})
	}
	f, err := os.Create(filepath.Join(ad, "adapter_model.safetensors"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	if err := safetensors.WriteHeader(w, map[string]string{"format": "pt"}, specs); err != nil {
		return 0, err
	}
	rep := &extraction.Report{Format: extraction.Format, Base: p.Base, Tuned: p.Tuned, Rank: r, DType: "BF16",
		TensorsCompared: extraction.I(p.TensorsCompared), TensorsDiffering: extraction.I(len(pairs))}
	var written int64
	row := make([]byte, 0, 2*max(r, 17408))
	for _, pr := range pairs {
		rng := rngFor(seed, pr.Module)
		k := min(r, pr.Out, pr.In)
		// Singular values from 1 down to 0.1 of the first, the first log-uniform in [0.5, 2].
		s := make([]float64, r)
		s0 := math.Exp(math.Log(0.5) + rng.Float64()*math.Log(4))
		var ss float64
		for i := 0; i < k; i++ {
			s[i] = s0 * (1 - 0.9*float64(i)/float64(max(1, k-1)))
			ss += s[i] * s[i]
		}
		u := newOrthoCols(rng, pr.Out, k)
		v := newOrthoCols(rng, pr.In, k)
		// A: r × in, row i = √sᵢ·vᵢᵀ (zero beyond k).
		for i := 0; i < r; i++ {
			row = row[:0]
			for j := 0; j < pr.In; j++ {
				x := 0.0
				if i < k {
					x = math.Sqrt(s[i]) * v.at(j, i)
				}
				row = binary.LittleEndian.AppendUint16(row, dtype.F32ToBF16(float32(x)))
			}
			if _, err := w.Write(row); err != nil {
				return 0, err
			}
		}
		// B: out × r, row i = (uᵢₖ·√sₖ)ₖ.
		for i := 0; i < pr.Out; i++ {
			row = row[:0]
			for kk := 0; kk < r; kk++ {
				x := 0.0
				if kk < k {
					x = u.at(i, kk) * math.Sqrt(s[kk])
				}
				row = binary.LittleEndian.AppendUint16(row, dtype.F32ToBF16(float32(x)))
			}
			if _, err := w.Write(row); err != nil {
				return 0, err
			}
		}
		written += 2 * int64(r) * int64(pr.Out+pr.In)
		rep.Matrices = append(rep.Matrices, extraction.Matrix{
			Module: pr.Module, Shape: []int{pr.Out, pr.In}, SingularValues: s, DeltaFro: extraction.F(math.Sqrt(ss)),
		})
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	cfg := AdapterConfig(p, p.Base.Repo)
	if layers > 0 {
		var kept []int
		for _, pr := range pairs {
			if !slices.Contains(kept, pr.Layer) {
				kept = append(kept, pr.Layer)
			}
		}
		slices.Sort(kept)
		cfg["layers_to_transform"] = kept
	}
	if err := writeJSON(filepath.Join(ad, "adapter_config.json"), cfg); err != nil {
		return 0, err
	}
	return written, writeJSON(filepath.Join(ad, "extraction-report.json"), rep)
}
