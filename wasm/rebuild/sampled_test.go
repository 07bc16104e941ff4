package rebuild

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

var (
	sharedOnce sync.Once
	sharedDir  string
	sharedFull *Result
	sharedErr  error
)

// sharedWorld is one demo world for the sampled tests (generating one
// takes seconds), with its full rebuild: the true figures the samples
// estimate. The tests must not change it.
func sharedWorld(t *testing.T) (string, *Result) {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "clefcheck-sampled-")
		if sharedErr != nil {
			return
		}
		if sharedErr = world.Generate(sharedDir, 3); sharedErr != nil {
			return
		}
		sharedFull, sharedErr = Run(context.Background(), localOpt(sharedDir, 0, 0))
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedDir, sharedFull
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedDir != "" {
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

func demoClaims() *claims.Profile {
	p, err := claims.Builtin("demo")
	if err != nil {
		panic(err)
	}
	return p
}

func localOpt(dir string, rows int, seed uint64) Options {
	return Options{Adapter: source.Dir(filepath.Join(dir, world.AdapterDir)), Base: source.Dir(filepath.Join(dir, world.BaseDir)),
		Tuned: source.Dir(filepath.Join(dir, world.TunedDir)), Claims: demoClaims(), Rows: rows, Seed: seed}
}

// counting serves a folder over loopback HTTP (Range as net/http serves
// it) and counts the requests and the body bytes it sends.
type counting struct {
	srv             *httptest.Server
	requests, bytes atomic.Int64
}

func serve(t *testing.T, dir string) *counting {
	c := &counting{}
	files := http.FileServer(http.Dir(dir))
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		files.ServeHTTP(&countWriter{w, &c.bytes}, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *counting) reset() { c.requests.Store(0); c.bytes.Store(0) }

type countWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p))) // before the client can have it
	return w.ResponseWriter.Write(p)
}

// remote opens base and tuned of dir over HTTP, reads made exact once the
// headers are in (as the runner does), and the server's counters reset
// then, so they count what the rebuild fetched after planning.
func remote(t *testing.T, dir string, rows int, seed uint64) (Options, *counting) {
	t.Helper()
	srv := serve(t, dir)
	opt := localOpt(dir, rows, seed)
	var hs []*source.HTTP
	for _, sub := range []string{world.BaseDir, world.TunedDir} {
		h, err := source.NewHTTP(srv.srv.URL + "/" + sub + "/")
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	opt.Base, opt.Tuned = hs[0], hs[1]
	opt.Exact = func() {
		for _, h := range hs {
			h.Chunk, h.ReadAhead = 0, 0
		}
		srv.reset()
	}
	return opt, srv
}

func byModule(r *Result) map[string]*Matrix {
	out := map[string]*Matrix{}
	for _, m := range r.Matrices {
		out[m.Module] = m
	}
	return out
}

// covers tells whether every sampled interval holds the full rebuild's
// figure (to a relative 10⁻⁹: both sum the same float64 terms, in a
// different order), and lists the misses.
func covers(sam, full *Result) (misses []string) {
	want := byModule(full)
	for _, m := range sam.Matrices {
		f := want[m.Module]
		for _, x := range []struct {
			name string
			iv   *[2]float64
			v    float64
		}{{"residual_to_noise", m.ResidualToNoiseCI, f.ResidualToNoise}, {"rebuilt_rel_error", m.RebuiltRelErrorCI, f.RebuiltRelError}} {
			if x.iv == nil || x.v < x.iv[0]*(1-1e-9) || x.v > x.iv[1]*(1+1e-9) {
				misses = append(misses, fmt.Sprintf("%s %s %.6g not in %v", m.Module, x.name, x.v, x.iv))
			}
		}
	}
	return misses
}

// TestSampledAgreesWithFull: on the demo world served over loopback HTTP,
// 32 rows of each module (of 6 to 192) give, for every one of the 186
// modules, intervals that hold the full rebuild's residual/noise and
// rebuilt relative error, a verdict that is not fail, and the identity
// check's figures; the bytes the server sent after the headers are the
// plan's (the identity check's heads and the rows, both checkpoints),
// within the budget, and the requests one per tensor head and one per run
// of consecutive rows.
func TestSampledAgreesWithFull(t *testing.T) {
	dir, full := sharedWorld(t)
	if full.Verdict != report.VerdictPass || len(full.Matrices) != 186 {
		t.Fatalf("full rebuild: %s, %d matrices %v", full.Verdict, len(full.Matrices), full.Findings)
	}
	opt, srv := remote(t, dir, 32, 7)
	opt.MaxBytes = 24 << 20
	var planned *report.RebuildPlan
	opt.OnPlan = func(p *report.RebuildPlan) { planned = p }
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict == report.VerdictFail || res.Verdict == report.VerdictError || res.Mode != report.RebuildSampled || len(res.Matrices) != 186 {
		t.Fatalf("sampled: %s (%s), %d matrices: %v", res.Verdict, res.Mode, len(res.Matrices), res.Findings)
	}
	if res.Compared != full.Compared || strings.Join(res.Differing, ",") != strings.Join(full.Differing, ",") {
		t.Errorf("identity check: %d compared, %d differing; full: %d, %d", res.Compared, len(res.Differing), full.Compared, len(full.Differing))
	}
	if miss := covers(res, full); len(miss) > 0 {
		t.Errorf("%d intervals miss the full figures: %v", len(miss), miss)
	}
	p := res.Plan
	if planned == nil || planned != p || p.Mode != report.RebuildSampled || p.RowsPerModule != 32 || p.Modules != 186 {
		t.Fatalf("plan %+v (told %v)", p, planned)
	}
	// The bytes: planned = asked = sent (the server's bodies) + the heads
	// that lie in the first 64 KiB of their shard (read with its header
	// when it was opened), ≤ the budget.
	kept, keptReads := keptHeads(t, dir)
	if res.BytesRead != p.Bytes || srv.bytes.Load() != p.Bytes-kept || p.Bytes > opt.MaxBytes {
		t.Errorf("planned %d bytes (max %d), read %d, the server sent %d (+ %d kept from the headers' reads)", p.Bytes, opt.MaxBytes, res.BytesRead, srv.bytes.Load(), kept)
	}
	var runs int64
	for _, m := range res.Matrices {
		if m.Rows != min(32, m.Units) || m.Units == 0 {
			t.Errorf("%s: %d of %d rows", m.Module, m.Rows, m.Units)
		}
	}
	sam := byModule(res)
	for _, mod := range full.Matrices {
		j := &job{units: sam[mod.Module].Units}
		j.rows = chooseRows(res.Sample.Seed, mod.Module, j.units, 32)
		for c := range j.rows {
			if c == 0 || j.rows[c] != j.rows[c-1]+1 {
				runs++
			}
		}
	}
	if got, want := srv.requests.Load(), int64(p.IdentityReads-keptReads)+2*runs; got != want {
		t.Errorf("%d requests after the headers, want %d heads (of %d, %d kept) + 2 × %d runs of rows", got, p.IdentityReads-keptReads, p.IdentityReads, keptReads, runs)
	}
	s := res.Sample
	if s == nil || s.Seed != 7 || s.RowsPerModule != 32 || s.Confidence != Family || s.Intervals == 0 || s.Level <= Family || s.Decided+s.Undecided != 186 {
		t.Errorf("sample %+v", s)
	}
	t.Logf("planned %d bytes (%d heads: %d; %d rows: %d), the server sent %d in %d requests; %d intervals at level %.6f; %d modules decided, %d not",
		p.Bytes, p.IdentityReads, p.IdentityBytes, p.Rows, p.RowBytes, srv.bytes.Load(), srv.requests.Load(), s.Intervals, s.Level, s.Decided, s.Undecided)

	// The same seed chooses the same rows: the same figures.
	again, err := Run(context.Background(), localOpt(dir, 32, 7))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range again.Matrices {
		if x := sam[m.Module]; *x.ResidualToNoiseCI != *m.ResidualToNoiseCI || x.ResidualFro != m.ResidualFro {
			t.Fatalf("%s: seed 7 again gives %v, first %v", m.Module, m.ResidualToNoiseCI, x.ResidualToNoiseCI)
		}
	}
}

// TestSampledCalibration: over 60 seeds of 32 rows per module (the
// default), all the intervals of a run (276: two for each of the 138
// modules with more than 32 rows, Bonferroni at a simultaneous 99.9 %)
// hold the full rebuild's figures in at least 54 runs (the bar the 95 %
// level had: nominal there, 56 of 60), and miss at most twice the nominal
// 0.1 % / 276 of the time — none, on these seeds (at 95 %: 5 of 16,560).
func TestSampledCalibration(t *testing.T) {
	dir, full := sharedWorld(t)
	const seeds = 60
	good, misses, intervals := 0, 0, 0
	for seed := uint64(1); seed <= seeds; seed++ {
		res, err := Run(context.Background(), localOpt(dir, 32, seed))
		if err != nil {
			t.Fatal(err)
		}
		miss := covers(res, full)
		misses += len(miss)
		intervals += res.Sample.Intervals
		if len(miss) == 0 {
			good++
		} else {
			t.Logf("seed %d: %v", seed, miss)
		}
	}
	t.Logf("all intervals covered in %d of %d runs; %d of %d intervals missed", good, seeds, misses, intervals)
	if good < seeds*90/100 || float64(misses) > 2*(1-Family)*seeds {
		t.Errorf("simultaneous coverage %d of %d runs, %d of %d intervals missed", good, seeds, misses, intervals)
	}
}

// TestSampledTamper: lora_B of one module scaled by 1.01 adds about the
// bf16 noise again to its residual (‖0.01·B·A‖ ≈ 0.01 × 0.15‖W‖ against a
// noise of ≈ 0.16 %·‖W‖): 32 rows of each module (of 192 in that one)
// fail that module, and only that one.
func TestSampledTamper(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 3); err != nil {
		t.Fatal(err)
	}
	mod := "model.language_model.layers.44.mlp.gate_proj"
	tamper(t, filepath.Join(dir, world.AdapterDir), "base_model.model."+mod+".lora_B.weight", 1.01)
	res, err := Run(context.Background(), localOpt(dir, 32, 11))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]int{}
	for _, f := range res.Findings {
		if f.Code == report.RebuildError && f.Severity == report.Fail {
			bad[f.Subject]++
		}
	}
	m := byModule(res)[mod]
	if res.Verdict != report.VerdictFail || len(bad) != 1 || bad[mod] == 0 {
		t.Fatalf("tampered: %s, rebuild.error on %v; %s: %.4g in %v", res.Verdict, bad, mod, m.ResidualToNoise, m.ResidualToNoiseCI)
	}
	t.Logf("%s from %d of %d rows: residual/noise %.4g, interval %.4g–%.4g", mod, m.Rows, m.Units, m.ResidualToNoise, m.ResidualToNoiseCI[0], m.ResidualToNoiseCI[1])
}

// TestSampledBudget: a plan beyond MaxBytes does not start: verdict error
// (check.invalid) saying how many rows would fit, no figure, and not a
// byte fetched after the headers; the fitting number of rows then runs.
func TestSampledBudget(t *testing.T) {
	dir, _ := sharedWorld(t)
	const budget = 17e6 // the identity check's heads take 15.6 MB of the demo world's 2 × 8 MB
	opt, srv := remote(t, dir, 64, 1)
	opt.MaxBytes = budget
	res, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != report.VerdictError || len(res.Findings) != 1 || res.Findings[0].Code != report.CheckInvalid || res.Plan == nil || res.Plan.Bytes <= opt.MaxBytes || len(res.Matrices) != 0 || res.Compared != 0 || res.BytesRead != 0 {
		t.Fatalf("over budget: %s %v, plan %+v, %d matrices", res.Verdict, res.Findings, res.Plan, len(res.Matrices))
	}
	if srv.bytes.Load() != 0 || srv.requests.Load() != 0 {
		t.Errorf("a refused plan fetched %d bytes in %d requests", srv.bytes.Load(), srv.requests.Load())
	}
	msg := res.Findings[0].Message
	i := strings.Index(msg, "--rows ")
	if !strings.Contains(msg, "more than the 17.0 MB allowed") || i < 0 {
		t.Fatalf("message: %s", msg)
	}
	var fit int
	if _, err := fmt.Sscanf(msg[i:], "--rows %d", &fit); err != nil {
		t.Fatalf("message %q: %v", msg, err)
	}
	opt, srv = remote(t, dir, fit, 1)
	opt.MaxBytes = budget
	kept, _ := keptHeads(t, dir)
	if res, err = Run(context.Background(), opt); err != nil || res.Verdict == report.VerdictError || res.Plan.Bytes > opt.MaxBytes || srv.bytes.Load() != res.Plan.Bytes-kept {
		t.Fatalf("%d rows: %s %v, plan %+v, sent %d", fit, res.Verdict, res.Findings, res.Plan, srv.bytes.Load())
	}
	opt.Rows = fit + 1
	if res, _ = Run(context.Background(), opt); res.Verdict != report.VerdictError {
		t.Errorf("%d rows fit in 17 MB, but %d rows did not refuse: %+v", fit, fit+1, res.Plan)
	}
	opt.Rows = 1
	if res, _ = Run(context.Background(), opt); res.Verdict != report.VerdictError || res.Findings[0].Code != report.CheckInvalid {
		t.Errorf("1 row: %s %v", res.Verdict, res.Findings)
	}
}

// keptHeads counts the identity check's heads (bytes, reads) that lie in
// the first FirstChunk bytes of their shard, which opening it read.
func keptHeads(t *testing.T, dir string) (bytes int64, reads int) {
	t.Helper()
	var cks []*safetensors.Checkpoint
	for _, sub := range []string{world.BaseDir, world.TunedDir} {
		ck, err := safetensors.OpenCheckpoint(source.Dir(filepath.Join(dir, sub)), ".", "model")
		if err != nil {
			t.Fatal(err)
		}
		defer ck.Close()
		cks = append(cks, ck)
	}
	first := int64(64 << 10) // source.HTTP's FirstChunk
	for _, name := range cks[0].Names() {
		a, _, _ := cks[0].Tensor(name)
		b, _, _ := cks[1].Tensor(name)
		n := headBytes(a, b)
		for _, x := range []safetensors.TensorInfo{a, b} {
			if n > 0 && x.Offset+n <= first {
				bytes, reads = bytes+n, reads+1
			}
		}
	}
	return bytes, reads
}

// transposedWorld rewrites the shared world's checkpoints as single files
// whose adapted matrices are stored in × out, and its config with
// fan_in_fan_out (GPT-2's Conv1D layout): the same weights, transposed.
func transposedWorld(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	ack, err := safetensors.OpenCheckpoint(source.Dir(filepath.Join(from, world.AdapterDir)), ".", "adapter_model")
	if err != nil {
		t.Fatal(err)
	}
	adapted := map[string]bool{}
	for m := range Pairs(ack) {
		adapted[m] = true
	}
	ack.Close()
	for _, sub := range []string{world.BaseDir, world.TunedDir} {
		ck, err := safetensors.OpenCheckpoint(source.Dir(filepath.Join(from, sub)), ".", "model")
		if err != nil {
			t.Fatal(err)
		}
		var ts []safetensors.Tensor
		for _, name := range ck.Names() {
			ti, r, _ := ck.Tensor(name)
			raw, err := r.ReadTensor(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			shape := ti.Shape
			if adapted[trimWeight(name)] {
				rows, cols, sz := int(shape[0]), int(shape[1]), 2
				tr := make([]byte, len(raw))
				for i := 0; i < rows; i++ {
					for j := 0; j < cols; j++ {
						copy(tr[(j*rows+i)*sz:(j*rows+i+1)*sz], raw[(i*cols+j)*sz:(i*cols+j+1)*sz])
					}
				}
				raw, shape = tr, []int64{shape[1], shape[0]}
			}
			ts = append(ts, safetensors.Tensor{Spec: safetensors.Spec{Name: name, DType: ti.DType, Shape: shape}, Data: raw})
		}
		ck.Close()
		f, err := os.Create(filepath.Join(dir, sub, "model.safetensors"))
		if os.IsNotExist(err) {
			os.MkdirAll(filepath.Join(dir, sub), 0o755)
			f, err = os.Create(filepath.Join(dir, sub, "model.safetensors"))
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := safetensors.Encode(f, nil, ts); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	ad := filepath.Join(dir, world.AdapterDir)
	os.MkdirAll(ad, 0o755)
	for _, name := range []string{"adapter_model.safetensors", "adapter_config.json"} {
		data, err := os.ReadFile(filepath.Join(from, world.AdapterDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "adapter_config.json" {
			data = []byte(strings.Replace(string(data), `"fan_in_fan_out": false`, `"fan_in_fan_out": true`, 1))
			if !strings.Contains(string(data), `"fan_in_fan_out": true`) {
				t.Fatalf("config: %s", data)
			}
		}
		os.WriteFile(filepath.Join(ad, name), data, 0o644)
	}
	return dir
}

// TestSampledFanInFanOut: with fan_in_fan_out the weights are stored
// in × out, so a contiguous stored row is a column x of W, rebuilt as
// s·B·A[:, x]: the full rebuild of the transposed world gives the figures
// of the original one (sums in another order: 10⁻⁹ relative), and the
// sampled one (32 stored rows of each module) covers them.
func TestSampledFanInFanOut(t *testing.T) {
	dir, orig := sharedWorld(t)
	tdir := transposedWorld(t, dir)
	full, err := Run(context.Background(), localOpt(tdir, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := byModule(orig)
	if full.Verdict != report.VerdictPass || len(full.Matrices) != 186 {
		t.Fatalf("full, transposed: %s, %d matrices: %v", full.Verdict, len(full.Matrices), full.Findings)
	}
	for _, m := range full.Matrices {
		if w := want[m.Module]; m.Out != w.Out || m.In != w.In || math.Abs(m.ResidualToNoise-w.ResidualToNoise) > 1e-9*w.ResidualToNoise {
			t.Fatalf("%s transposed: %d×%d %.9g, stored out × in: %d×%d %.9g", m.Module, m.Out, m.In, m.ResidualToNoise, w.Out, w.In, w.ResidualToNoise)
		}
	}
	sam, err := Run(context.Background(), localOpt(tdir, 32, 7))
	if err != nil {
		t.Fatal(err)
	}
	if sam.Verdict == report.VerdictFail || sam.Verdict == report.VerdictError || len(sam.Matrices) != 186 {
		t.Fatalf("sampled, transposed: %s: %v", sam.Verdict, sam.Findings)
	}
	for _, m := range sam.Matrices {
		if m.Units != m.In || m.Rows != min(32, m.In) {
			t.Errorf("%s: %d of %d stored rows, W is %d × %d", m.Module, m.Rows, m.Units, m.Out, m.In)
		}
	}
	if miss := covers(sam, orig); len(miss) > 0 {
		t.Errorf("%d intervals miss: %v", len(miss), miss)
	}
}
