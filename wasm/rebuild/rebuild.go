package rebuild

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/peft"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// HashPrefix is how much of each tensor the identity check hashes (the card's 256 KiB).
const HashPrefix = 256 << 10

// DefaultRatioBound is the residual_to_noise bound used without claims.
const DefaultRatioBound = 1.1

// ReportTolerance is the relative agreement required with the report's
// figures: both sides sum the same bf16 values, in different orders.
const ReportTolerance = 1e-2

// Options configure a rebuild check; the adapter, base and tuned
// checkpoints are the root directories of their file systems.
type Options struct {
	Adapter, Base, Tuned fs.FS
	Claims               *claims.Profile
	Report               *extraction.Report // nil: Adapter's extraction-report.json if present
	Workers              int
	RowBlock             int // rows per block (default 256)
	Progress             func(progress.Status)
}

// Matrix is report.RebuildMatrix.
type Matrix = report.RebuildMatrix

// Result is report.Rebuild.
type Result = report.Rebuild

type job struct {
	m      *Matrix
	keyA   string
	keyB   string
	weight string
	s      float64
	r      int
	fanIn  bool
}

// Run performs the rebuild check.
func Run(ctx context.Context, opt Options) (*Result, error) {
	res := &Result{}
	var c report.Collector
	finish := func() *Result {
		res.Outcome = c.Outcome()
		return res
	}
	cfg, err := peft.ReadConfig(opt.Adapter, "adapter_config.json")
	if err != nil {
		c.Findings = append(c.Findings, findings.Of(err, "adapter_config.json")...)
		return finish(), nil
	}
	var cks [3]*safetensors.Checkpoint
	for i, x := range []struct {
		fsys fs.FS
		stem string
	}{{opt.Adapter, "adapter_model"}, {opt.Base, "model"}, {opt.Tuned, "model"}} {
		ck, err := safetensors.OpenCheckpoint(x.fsys, ".", x.stem)
		if err != nil {
			c.Findings = append(c.Findings, findings.Of(err, x.stem)...)
			continue
		}
		defer ck.Close()
		cks[i] = ck
	}
	if cks[0] == nil || cks[1] == nil || cks[2] == nil {
		return finish(), nil
	}
	ad, base, tuned := cks[0], cks[1], cks[2]
	rep := opt.Report
	if rep == nil && source.Exists(opt.Adapter, "extraction-report.json") {
		if data, err := source.ReadSmall(opt.Adapter, "extraction-report.json", extraction.MaxSize); err == nil {
			rep, _ = extraction.Parse(data, "extraction-report.json")
		}
	}

	// Pairs of the adapter, by module.
	pairs := map[string]*job{}
	for _, name := range ad.Names() {
		k := peft.ParseKey(name)
		if k.Kind != peft.KindLoRA {
			continue
		}
		j := pairs[k.Module]
		if j == nil {
			j = &job{m: &Matrix{Module: k.Module}, weight: k.Module + ".weight", s: cfg.Scaling(k.Module), r: cfg.RankOf(k.Module), fanIn: cfg.FanInFanOut}
			pairs[k.Module] = j
		}
		if k.Half == peft.HalfA {
			j.keyA = name
		} else {
			j.keyB = name
		}
	}

	// The card's step 1.
	meter := progress.NewMeter("identity check", int64(len(base.Names())+len(tuned.Names())), opt.Progress)
	meter.Unit = "tensors"
	differing := map[string]bool{}
	seen := map[string]bool{}
	for _, name := range base.Names() {
		seen[name] = true
		if _, _, ok := tuned.Tensor(name); !ok {
			c.Addf(report.RebuildError, report.Fail, name, nil, nil, "in the base checkpoint but not in the tuned one")
			continue
		}
		same, err := samePrefix(base, tuned, name)
		meter.Add(2)
		if err != nil {
			c.Findings = append(c.Findings, findings.Of(err, name)...)
			continue
		}
		res.Compared++
		if !same {
			differing[name] = true
			res.Differing = append(res.Differing, name)
		}
	}
	for _, name := range tuned.Names() {
		if !seen[name] {
			c.Addf(report.RebuildError, report.Fail, name, nil, nil, "in the tuned checkpoint but not in the base one")
		}
	}
	meter.Finish()
	sort.Strings(res.Differing)
	for _, name := range res.Differing {
		mod := trimWeight(name)
		if pairs[mod] == nil {
			c.Addf(report.PairMissing, report.Fail, mod, nil, nil, "the tuned model's %s differs from the base's (first %d KiB), but the adapter has no pair for it", name, HashPrefix>>10)
		}
	}
	if p := opt.Claims; p != nil && p.TensorsCompared > 0 && res.Compared != p.TensorsCompared {
		c.Addf(report.RebuildError, report.Warn, "checkpoints", res.Compared, p.TensorsCompared, "%d tensors compared, the claims say %d", res.Compared, p.TensorsCompared)
	}
	if rep != nil {
		if rep.TensorsCompared != nil && *rep.TensorsCompared != res.Compared {
			c.Addf(report.ReportMismatch, report.Fail, "extraction-report.json", res.Compared, *rep.TensorsCompared, "%d tensors compared here, the report says %d", res.Compared, *rep.TensorsCompared)
		}
		if rep.TensorsDiffering != nil && *rep.TensorsDiffering != len(res.Differing) {
			c.Addf(report.ReportMismatch, report.Fail, "extraction-report.json", len(res.Differing), *rep.TensorsDiffering, "%d tensors differ here, the report says %d", len(res.Differing), *rep.TensorsDiffering)
		}
	}

	// Rebuild each pair.
	var jobs []*job
	var total int64
	var mods []string
	for mod := range pairs {
		mods = append(mods, mod)
	}
	sort.Strings(mods)
	for _, mod := range mods {
		j := pairs[mod]
		if j.keyA == "" || j.keyB == "" {
			continue // the audit reports half pairs
		}
		tb, _, okB := base.Tensor(j.weight)
		_, _, okT := tuned.Tensor(j.weight)
		if !okB || !okT {
			c.Addf(report.PairUnexpected, report.Fail, mod, nil, nil, "the adapter has a pair for %s, which the checkpoints do not have", j.weight)
			continue
		}
		if !differing[j.weight] {
			c.Addf(report.PairUnexpected, report.Warn, mod, nil, nil, "the adapter changes %s, whose first %d KiB are identical in base and tuned", j.weight, HashPrefix>>10)
		}
		total += 2 * tb.Bytes()
		jobs = append(jobs, j)
	}
	meter = progress.NewMeter("rebuild", total, opt.Progress)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	block := opt.RowBlock
	if block <= 0 {
		block = 256
	}
	ch := make(chan *job)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				fs := rebuildOne(j, ad, base, tuned, block, meter)
				mu.Lock()
				c.Findings = append(c.Findings, fs...)
				mu.Unlock()
			}
		}()
	}
	var cerr error
	for _, j := range jobs {
		if cerr = ctx.Err(); cerr != nil {
			break
		}
		ch <- j
	}
	close(ch)
	wg.Wait()
	meter.Finish()
	if cerr != nil {
		return nil, cerr
	}
	for _, j := range jobs {
		if j.m.NoiseFro == 0 && j.m.Out == 0 {
			continue
		}
		res.Matrices = append(res.Matrices, j.m)
		judge(&c, j.m, opt.Claims, rep)
	}
	return finish(), nil
}

func trimWeight(name string) string {
	const suf = ".weight"
	if len(name) > len(suf) && name[len(name)-len(suf):] == suf {
		return name[:len(name)-len(suf)]
	}
	return name
}

// samePrefix compares two tensors' dtype, shape and the SHA-256 of their
// first HashPrefix bytes.
func samePrefix(a, b *safetensors.Checkpoint, name string) (bool, error) {
	ta, ra, _ := a.Tensor(name)
	tb, rb, _ := b.Tensor(name)
	if ta.DType != tb.DType || fmt.Sprint(ta.Shape) != fmt.Sprint(tb.Shape) {
		return false, nil
	}
	n := min(ta.Bytes(), HashPrefix)
	ba, err := ra.ReadRange(ta, 0, n, nil)
	if err != nil {
		return false, err
	}
	bb, err := rb.ReadRange(tb, 0, n, nil)
	if err != nil {
		return false, err
	}
	return sha256.Sum256(ba) == sha256.Sum256(bb), nil
}

// rebuildOne computes one module's figures in blocks of rows.
func rebuildOne(j *job, ad, base, tuned *safetensors.Checkpoint, block int, meter *progress.Meter) []report.Finding {
	var c report.Collector
	m := j.m
	ta, ra, _ := ad.Tensor(j.keyA)
	tb, rb, _ := ad.Tensor(j.keyB)
	tw, rw, _ := base.Tensor(j.weight)
	tt, rt, _ := tuned.Tensor(j.weight)
	if len(ta.Shape) != 2 || len(tb.Shape) != 2 || len(tw.Shape) != 2 || fmt.Sprint(tw.Shape) != fmt.Sprint(tt.Shape) {
		c.Addf(report.ShapeMismatch, report.Fail, m.Module, fmt.Sprint(tw.Shape), nil, "cannot rebuild: base %v, tuned %v, lora_A %v, lora_B %v", tw.Shape, tt.Shape, ta.Shape, tb.Shape)
		return c.Findings
	}
	r := int(ta.Shape[0])
	in, out := int(ta.Shape[1]), int(tb.Shape[0])
	wOut, wIn := int(tw.Shape[0]), int(tw.Shape[1])
	if j.fanIn {
		wOut, wIn = wIn, wOut
	}
	if int(tb.Shape[1]) != r || wOut != out || wIn != in {
		c.Addf(report.ShapeMismatch, report.Fail, m.Module, []int{out, in}, []int{wOut, wIn}, "s·B·A is %d × %d, the weight is %d × %d", out, in, wOut, wIn)
		return c.Findings
	}
	for _, t := range []safetensors.TensorInfo{ta, tb, tw, tt} {
		if !dtype.Decodable(t.DType) {
			c.Addf(report.DtypeUnexpected, report.Fail, t.Name, t.DType, nil, "cannot decode %s", t.DType)
			return c.Findings
		}
	}
	m.Out, m.In, m.Large = out, in, out > r && in > r
	if r == 0 || out == 0 || in == 0 {
		c.Addf(report.ShapeMismatch, report.Fail, m.Module, []int{out, in, r}, nil, "nothing to rebuild: lora_A %v, lora_B %v have no elements", ta.Shape, tb.Shape)
		m.Out = 0
		return c.Findings
	}
	if dec := 4 * (int64(r)*int64(in) + int64(out)*int64(r)); dec > MaxFactorBytes {
		c.Addf(report.LimitExceeded, report.Fail, m.Module, dec, int64(MaxFactorBytes), "not rebuilt: the factors take %d MB decoded, more than the %d MB a worker holds (rebuild.MaxFactorBytes)", dec>>20, MaxFactorBytes>>20)
		m.Out = 0
		return c.Findings
	}
	a, err := decodeAll(ra, ta)
	if err != nil {
		return findings.Of(err, ta.Name)
	}
	bAll, err := decodeAll(rb, tb)
	if err != nil {
		return findings.Of(err, tb.Name)
	}
	var res2, noise2, tuned2, delta2 float64
	// Row blocks of the weight: never more rows than it has (its bytes,
	// read block by block, justify them).
	rows := min(block, out)
	prod := make([]float32, rows*in)
	wblk := make([]float32, rows*in)
	tblk := make([]float32, rows*in)
	var raw []byte
	A := blas32.General{Rows: r, Cols: in, Stride: in, Data: a}
	for i0 := 0; i0 < out; i0 += block {
		k := min(block, out-i0)
		Bk := blas32.General{Rows: k, Cols: r, Stride: r, Data: bAll[i0*r : (i0+k)*r]}
		P := blas32.General{Rows: k, Cols: in, Stride: in, Data: prod[:k*in]}
		blas32.Gemm(blas.NoTrans, blas.NoTrans, float32(j.s), Bk, A, 0, P)
		if raw, err = readRows(rw, tw, i0, k, j.fanIn, wblk, raw); err != nil {
			return findings.Of(err, tw.Name)
		}
		if raw, err = readRows(rt, tt, i0, k, j.fanIn, tblk, raw); err != nil {
			return findings.Of(err, tt.Name)
		}
		meter.Add(2 * int64(k*in) * int64(dtype.Size(tw.DType)))
		for x := 0; x < k*in; x++ {
			w, t := float64(wblk[x]), float64(tblk[x])
			d := t - w
			e := d - float64(prod[x])
			res2 += e * e
			delta2 += d * d
			tuned2 += t * t
			u := dtype.ULPBF16(tblk[x])
			noise2 += u * u / 12
		}
	}
	m.DeltaFro, m.ResidualFro, m.NoiseFro = math.Sqrt(delta2), math.Sqrt(res2), math.Sqrt(noise2)
	if m.NoiseFro > 0 {
		m.ResidualToNoise = m.ResidualFro / m.NoiseFro
	}
	if tuned2 > 0 {
		m.RebuiltRelError = m.ResidualFro / math.Sqrt(tuned2)
	}
	finiteFigures(&c, m, j.s)
	return c.Findings
}

// MaxFactorBytes bounds a pair's factors decoded as float32, which a
// rebuild worker holds whole (Clef's largest pair takes 36 MB).
const MaxFactorBytes = 256 << 20

// finiteFigures keeps NaN and ±Inf out of a module's figures (JSON has no
// such numbers): each becomes −1, as report.Fin does, and a failing
// values.nonfinite finding says which were not finite.
func finiteFigures(c *report.Collector, m *Matrix, s float64) {
	var bad []string
	for _, f := range []struct {
		name string
		p    *float64
	}{{"delta_fro", &m.DeltaFro}, {"residual_fro", &m.ResidualFro}, {"noise_fro", &m.NoiseFro}, {"residual_to_noise", &m.ResidualToNoise}, {"rebuilt_rel_error", &m.RebuiltRelError}} {
		if math.IsNaN(*f.p) || math.IsInf(*f.p, 0) {
			*f.p = -1
			bad = append(bad, f.name)
		}
	}
	if len(bad) > 0 {
		c.Addf(report.ValuesNonfinite, report.Fail, m.Module, bad, nil, "%s not finite (shown as −1): the weights or factors hold NaN or infinite values, or the scaling %.3g overflows float32 (%v)", strings.Join(bad, ", "), s, float32(s))
	}
}

// decodeAll decodes a tensor as float32, reading it in chunks (never its
// bytes and its values whole at once).
func decodeAll(r *safetensors.Reader, t safetensors.TensorInfo) ([]float32, error) {
	out := make([]float32, t.Len())
	sz := int64(dtype.Size(t.DType))
	step := max(sz, (4<<20)/sz*sz)
	var raw []byte
	for off := int64(0); off < t.Bytes(); off += step {
		var err error
		if raw, err = r.ReadRange(t, off, min(off+step, t.Bytes()), raw); err != nil {
			return nil, err
		}
		if _, err := dtype.Decode32(t.DType, raw, out[off/sz:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readRows decodes rows [i0, i0+k) of the out × in view of a weight into
// dst; with fan_in_fan_out the weight is stored in × out and is read by
// columns.
func readRows(r *safetensors.Reader, t safetensors.TensorInfo, i0, k int, transposed bool, dst []float32, raw []byte) ([]byte, error) {
	sz := dtype.Size(t.DType)
	cols := int(t.Shape[1])
	if !transposed {
		var err error
		raw, err = r.ReadRange(t, int64(i0*cols*sz), int64((i0+k)*cols*sz), raw)
		if err != nil {
			return raw, err
		}
		_, err = dtype.Decode32(t.DType, raw, dst[:k*cols])
		return raw, err
	}
	// Stored in × out: row x of the stored matrix holds column x of W.
	rows := int(t.Shape[0])
	tmp := make([]float32, k)
	for x := 0; x < rows; x++ {
		var err error
		raw, err = r.ReadRange(t, int64((x*cols+i0)*sz), int64((x*cols+i0+k)*sz), raw)
		if err != nil {
			return raw, err
		}
		dtype.Decode32(t.DType, raw, tmp)
		for i := 0; i < k; i++ {
			dst[i*rows+x] = tmp[i]
		}
	}
	return raw, nil
}

// judge compares one module's figures with the claims and the report.
func judge(c *report.Collector, m *Matrix, p *claims.Profile, rep *extraction.Report) {
	bound := DefaultRatioBound
	if p != nil && p.Fidelity.ResidualToNoiseMax > 0 {
		bound = p.Fidelity.ResidualToNoiseMax
	}
	if m.ResidualToNoise > bound {
		c.Addf(report.RebuildError, report.Fail, m.Module, m.ResidualToNoise, bound, "residual is %.4g × the bf16 noise of the tuned weight, above the bound %.4g", m.ResidualToNoise, bound)
	}
	if p != nil && m.Large && p.Fidelity.ResidualToNoiseMin > 0 && m.ResidualToNoise < p.Fidelity.ResidualToNoiseMin {
		c.Addf(report.RebuildError, report.Info, m.Module, m.ResidualToNoise, p.Fidelity.ResidualToNoiseMin, "residual is %.4g × the noise, below the claimed %.3g (better than claimed)", m.ResidualToNoise, p.Fidelity.ResidualToNoiseMin)
	}
	if p != nil && p.Fidelity.RebuiltRelErrorMax > 0 && m.RebuiltRelError > p.Fidelity.RebuiltRelErrorMax {
		c.Addf(report.RebuildError, report.Fail, m.Module, m.RebuiltRelError, p.Fidelity.RebuiltRelErrorMax, "rebuilt weight differs from the tuned one by %.4g%%, the claims say at most %.4g%%", 100*m.RebuiltRelError, 100*p.Fidelity.RebuiltRelErrorMax)
	}
	if rep == nil {
		return
	}
	x, ok := rep.Find(m.Module)
	if !ok {
		return
	}
	cmp := func(field string, got float64, want *float64) {
		if want == nil {
			return
		}
		if d := math.Abs(got - *want); d > ReportTolerance*math.Abs(*want) && d > 1e-12 {
			c.Addf(report.ReportMismatch, report.Fail, m.Module, got, *want, "%s is %.6g here, the report says %.6g", field, got, *want)
		}
	}
	cmp("delta_fro", m.DeltaFro, x.DeltaFro)
	cmp("residual_fro", m.ResidualFro, x.ResidualFro)
	cmp("noise_fro", m.NoiseFro, x.NoiseFro)
	cmp("residual_to_noise", m.ResidualToNoise, x.ResidualToNoise)
	cmp("rebuilt_rel_error", m.RebuiltRelError, x.RebuiltRelError)
}
