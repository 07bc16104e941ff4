package rebuild

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

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
	// Rows > 0 makes a sampled rebuild: Rows stored rows of every module
	// (all of them where it has fewer), chosen by Seed, read from both
	// checkpoints; 0 rebuilds every row.
	Rows int
	Seed uint64 // the rows' seed (0: a fresh one, reported)
	// MaxBytes bounds what is read from the two checkpoints after their
	// headers (the plan's Bytes; 0: no bound): a plan beyond it does not
	// start, and the result says what would fit.
	MaxBytes int64
	// OnPlan, when set, is told the plan before anything is read.
	OnPlan func(*report.RebuildPlan)
	// Exact, when set, is called once the checkpoints' headers are read:
	// a host that reads them by range then makes every later read one
	// request for exactly its bytes (no read-ahead chunks), so what is
	// fetched is what was planned.
	Exact func()
	// Concurrency bounds the identity check's reads in flight (default
	// IdentityConcurrency).
	Concurrency int
}

// IdentityConcurrency is how many tensor heads the identity check reads at
// once by default (over HTTP, one Range request each).
const IdentityConcurrency = 8

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
	// set by prepare
	ta, tb, tw, tt safetensors.TensorInfo
	ra, rb, rw, rt *safetensors.Reader
	units          int   // stored rows of the weight (out, or in with fan_in_fan_out)
	rowBytes       int64 // bytes of one stored row
	rows           []int // sampled: the stored rows read, ascending
}

// Run performs the rebuild check.
func Run(ctx context.Context, opt Options) (*Result, error) {
	res := &Result{Mode: report.RebuildFull}
	if opt.Rows > 0 {
		res.Mode = report.RebuildSampled
	}
	var c report.Collector
	finish := func() *Result {
		res.Outcome = c.Outcome()
		return res
	}
	if opt.Rows == 1 {
		c.Add(report.Could(report.CheckInvalid, "rows", "a sampled rebuild reads at least 2 rows of each module (the interval needs the rows' variance): choose more rows"))
		return finish(), nil
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
	if opt.Exact != nil {
		opt.Exact()
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
	var mods []string
	for mod := range pairs {
		mods = append(mods, mod)
	}
	sort.Strings(mods)
	var jobs []*job
	for _, mod := range mods {
		j := pairs[mod]
		if j.keyA == "" || j.keyB == "" {
			continue // the audit reports half pairs
		}
		_, _, okB := base.Tensor(j.weight)
		_, _, okT := tuned.Tensor(j.weight)
		if !okB || !okT {
			c.Addf(report.PairUnexpected, report.Fail, mod, nil, nil, "the adapter has a pair for %s, which the checkpoints do not have", j.weight)
			continue
		}
		if fs := prepare(j, ad, base, tuned); fs != nil {
			c.Findings = append(c.Findings, fs...)
			continue
		}
		jobs = append(jobs, j)
	}

	// The plan, before anything is read.
	plan := planOf(jobs, base, tuned, opt)
	res.Plan = plan
	if opt.OnPlan != nil {
		opt.OnPlan(plan)
	}
	if opt.MaxBytes > 0 && plan.Bytes > opt.MaxBytes {
		c.Add(report.Could(report.CheckInvalid, "rebuild plan", "%s", overBudget(plan, jobs, base, tuned, opt)))
		return finish(), nil
	}
	var read atomic.Int64
	defer func() { res.BytesRead = read.Load() }()

	// The card's step 1.
	differing, err := identity(ctx, &c, res, base, tuned, opt, &read)
	if err != nil {
		return nil, err
	}
	sort.Strings(res.Differing)
	for _, name := range res.Differing {
		mod := trimWeight(name)
		if pairs[mod] == nil {
			c.Addf(report.PairMissing, report.Fail, mod, nil, nil, "the tuned model's %s differs from the base's (first %d KiB), but the adapter has no pair for it", name, HashPrefix>>10)
		}
	}
	identityClaims(&c, res, opt.Claims, rep)
	for _, j := range jobs {
		if !differing[j.weight] {
			c.Addf(report.PairUnexpected, report.Warn, j.m.Module, nil, nil, "the adapter changes %s, whose first %d KiB are identical in base and tuned", j.weight, HashPrefix>>10)
		}
	}

	// Rebuild each pair.
	var sam *sampling
	if opt.Rows > 0 {
		sam = newSampling(jobs, opt)
		res.Sample = sam.info()
	}
	meter := progress.NewMeter("rebuild", plan.RowBytes, opt.Progress)
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
		if sam != nil {
			workers = max(workers, 4) // the reads wait on the network more than on the cores
		}
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
				var fs []report.Finding
				if sam != nil {
					fs = sam.one(j, meter, &read)
				} else {
					fs = rebuildOne(j, block, meter, &read)
				}
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
		if j.m.Out == 0 {
			continue
		}
		res.Matrices = append(res.Matrices, j.m)
		if sam != nil {
			sam.judge(&c, j.m, opt.Claims, rep)
		} else {
			judge(&c, j.m, opt.Claims, rep)
		}
	}
	if sam != nil {
		res.Sample.Decided, res.Sample.Undecided = sam.decided, sam.undecided
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

// prepare checks a pair's shapes and dtypes against its weight's and
// notes where its tensors are; findings mean it cannot be rebuilt.
func prepare(j *job, ad, base, tuned *safetensors.Checkpoint) []report.Finding {
	var c report.Collector
	m := j.m
	ta, ra, _ := ad.Tensor(j.keyA)
	tb, rb, _ := ad.Tensor(j.keyB)
	tw, rw, _ := base.Tensor(j.weight)
	tt, rt, _ := tuned.Tensor(j.weight)
	j.ta, j.tb, j.tw, j.tt, j.ra, j.rb, j.rw, j.rt = ta, tb, tw, tt, ra, rb, rw, rt
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
	if tw.DType != tt.DType {
		c.Addf(report.DtypeUnexpected, report.Fail, m.Module, tt.DType, tw.DType, "cannot rebuild: the base weight is %s, the tuned one %s", tw.DType, tt.DType)
		return c.Findings
	}
	if r == 0 || out == 0 || in == 0 {
		c.Addf(report.ShapeMismatch, report.Fail, m.Module, []int{out, in, r}, nil, "nothing to rebuild: lora_A %v, lora_B %v have no elements", ta.Shape, tb.Shape)
		return c.Findings
	}
	if dec := 4 * (int64(r)*int64(in) + int64(out)*int64(r)); dec > MaxFactorBytes {
		c.Addf(report.LimitExceeded, report.Fail, m.Module, dec, int64(MaxFactorBytes), "not rebuilt: the factors take %d MB decoded, more than the %d MB a worker holds (rebuild.MaxFactorBytes)", dec>>20, MaxFactorBytes>>20)
		return c.Findings
	}
	j.r = r
	j.units = int(tw.Shape[0])
	j.rowBytes = tw.Shape[1] * int64(dtype.Size(tw.DType))
	return nil
}

// rebuildOne computes one module's figures in blocks of rows.
func rebuildOne(j *job, block int, meter *progress.Meter, read *atomic.Int64) []report.Finding {
	var c report.Collector
	m := j.m
	ta, ra, tb, rb, tw, rw, tt, rt := j.ta, j.ra, j.tb, j.rb, j.tw, j.rw, j.tt, j.rt
	r := j.r
	in, out := int(ta.Shape[1]), int(tb.Shape[0])
	m.Out, m.In, m.Large = out, in, out > r && in > r
	a, err := decodeAll(ra, ta)
	if err != nil {
		m.Out = 0
		return findings.Of(err, ta.Name)
	}
	bAll, err := decodeAll(rb, tb)
	if err != nil {
		m.Out = 0
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
			m.Out = 0
			return findings.Of(err, tw.Name)
		}
		if raw, err = readRows(rt, tt, i0, k, j.fanIn, tblk, raw); err != nil {
			m.Out = 0
			return findings.Of(err, tt.Name)
		}
		n := 2 * int64(k*in) * int64(dtype.Size(tw.DType))
		meter.Add(n)
		read.Add(n)
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
