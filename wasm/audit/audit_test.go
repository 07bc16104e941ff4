package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

var worldDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "clefcheck-audit-")
	if err != nil {
		panic(err)
	}
	if err := world.Generate(dir, 1); err != nil {
		panic(err)
	}
	worldDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// adapter is an adapter held in memory, to tamper with.
type adapter struct {
	config  map[string]any
	tensors []safetensors.Tensor
	report  []byte
}

func load(t *testing.T) *adapter {
	t.Helper()
	dir := filepath.Join(worldDir, world.AdapterDir)
	a := &adapter{}
	data, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &a.config); err != nil {
		t.Fatal(err)
	}
	if a.report, err = os.ReadFile(filepath.Join(dir, "extraction-report.json")); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := safetensors.NewReader(bytes.NewReader(raw), int64(len(raw)), "adapter")
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range r.Tensors {
		b, err := r.ReadTensor(ti.Name, nil)
		if err != nil {
			t.Fatal(err)
		}
		a.tensors = append(a.tensors, safetensors.Tensor{Spec: safetensors.Spec{Name: ti.Name, DType: ti.DType, Shape: ti.Shape}, Data: bytes.Clone(b)})
	}
	return a
}

func (a *adapter) find(t *testing.T, name string) *safetensors.Tensor {
	for i := range a.tensors {
		if a.tensors[i].Name == name {
			return &a.tensors[i]
		}
	}
	t.Fatalf("no tensor %s", name)
	return nil
}

func (a *adapter) remove(name string) {
	out := a.tensors[:0]
	for _, x := range a.tensors {
		if x.Name != name {
			out = append(out, x)
		}
	}
	a.tensors = out
}

// scale multiplies a bf16 tensor's values by f.
func (a *adapter) scale(t *testing.T, name string, f float64) {
	x := a.find(t, name)
	vals := make([]float32, len(x.Data)/2)
	dtype.Decode32("BF16", x.Data, vals)
	for i := range vals {
		vals[i] = float32(float64(vals[i]) * f)
	}
	x.Data = dtype.EncodeBF16(nil, vals)
}

// write puts the adapter in a new directory, as one file or n shards.
func (a *adapter) write(t *testing.T, shards int) string {
	t.Helper()
	dir := t.TempDir()
	put := func(name string, data []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := json.Marshal(a.config)
	if err != nil {
		t.Fatal(err)
	}
	put("adapter_config.json", cfg)
	if a.report != nil {
		put("extraction-report.json", a.report)
	}
	if shards <= 1 {
		var b bytes.Buffer
		if err := safetensors.Encode(&b, nil, a.tensors); err != nil {
			t.Fatal(err)
		}
		put("adapter_model.safetensors", b.Bytes())
		return dir
	}
	wm := map[string]string{}
	var total int64
	per := (len(a.tensors) + shards - 1) / shards
	for s := 0; s < shards; s++ {
		name := fmt.Sprintf("adapter_model-%05d-of-%05d.safetensors", s+1, shards)
		part := a.tensors[s*per : min(len(a.tensors), (s+1)*per)]
		var b bytes.Buffer
		if err := safetensors.Encode(&b, nil, part); err != nil {
			t.Fatal(err)
		}
		for _, x := range part {
			wm[x.Name] = name
			total += int64(len(x.Data))
		}
		put(name, b.Bytes())
	}
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": wm})
	if err != nil {
		t.Fatal(err)
	}
	put("adapter_model.safetensors.index.json", idx)
	return dir
}

func demoClaims(t *testing.T) *claims.Profile {
	p, err := claims.Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, dir string, opt Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), source.Dir(dir), ".", opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// remoteShards is an Options.Remote that deals the pairs round-robin to n
// CheckPairs calls on the same files and passes their figures through
// JSON, as the browser's Web Workers do.
func remoteShards(t *testing.T, dir string, opt Options, n int) func(context.Context, []Job, func(int64)) ([]Figures, error) {
	return func(ctx context.Context, jobs []Job, add func(int64)) ([]Figures, error) {
		var out []Figures
		for w := 0; w < n; w++ {
			var mods []string
			for i := w; i < len(jobs); i += n {
				mods = append(mods, jobs[i].Module)
			}
			var last int64
			o := opt
			o.Workers = 1
			o.Progress = func(s progress.Status) { add(s.Done - last); last = s.Done }
			err := CheckPairs(ctx, source.Dir(dir), ".", o, mods, func(f Figures) {
				b, err := json.Marshal(f)
				if err != nil {
					t.Errorf("figures of %s: %v", f.Module, err)
					return
				}
				var back Figures
				if err := json.Unmarshal(b, &back); err != nil {
					t.Errorf("figures of %s: %v", f.Module, err)
				}
				out = append(out, back)
			})
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
}

// TestRemoteSameAsLocal: the audit with its pairs checked remotely (two
// shards, JSON in between) gives the local audit's result, figure for
// figure; a remote answer for a pair not asked for, or a missing one, is
// an error, not a silent pass.
func TestRemoteSameAsLocal(t *testing.T) {
	dir := filepath.Join(worldDir, world.AdapterDir)
	for _, opt := range []Options{{Claims: demoClaims(t)}, {Claims: demoClaims(t), Mode: report.ModeRandomized}, {Claims: demoClaims(t), Mode: report.ModeQuick}} {
		loc := run(t, dir, opt)
		var bytes int64
		ro := opt
		inner := remoteShards(t, dir, opt, 3)
		ro.Remote = func(ctx context.Context, jobs []Job, add func(int64)) ([]Figures, error) {
			return inner(ctx, jobs, func(n int64) { bytes += n; add(n) })
		}
		rem := run(t, dir, ro)
		loc.Summary.Seconds, rem.Summary.Seconds = 0, 0
		lj, _ := json.Marshal(loc)
		rj, _ := json.Marshal(rem)
		if string(lj) != string(rj) {
			t.Fatalf("mode %s: remote result differs:\n%s\n%s", mode(opt), rj, lj)
		}
		if bytes != loc.Summary.Bytes {
			t.Errorf("mode %s: remote reported %d bytes read, the pairs have %d", mode(opt), bytes, loc.Summary.Bytes)
		}
	}
	// One Session checking pair by pair, as each browser worker does: with
	// no report of its own, the audit's σ passed in each Job.
	opt := Options{Claims: demoClaims(t), Mode: report.ModeRandomized}
	loc := run(t, dir, opt)
	if loc.Summary.Report == "" {
		t.Fatal("the demo adapter's audit found no extraction report")
	}
	so := opt
	so.Remote = func(ctx context.Context, jobs []Job, add func(int64)) ([]Figures, error) {
		sopt := opt
		sopt.NoAutoReport = true
		sess, err := Open(source.Dir(dir), ".", sopt)
		if err != nil {
			return nil, err
		}
		defer sess.Close()
		var out []Figures
		for _, j := range jobs {
			if len(j.Ref) == 0 {
				t.Errorf("job %s carries no reference σ, the report lists them", j.Module)
			}
			f, err := sess.CheckRef(j.Module, j.Ref)
			if err != nil {
				return nil, err
			}
			add(j.Bytes)
			out = append(out, f)
		}
		if _, err := sess.Check("nope"); err == nil {
			t.Error("Session.Check accepted a module the adapter does not have")
		}
		return out, nil
	}
	rem := run(t, dir, so)
	loc.Summary.Seconds, rem.Summary.Seconds = 0, 0
	if lj, rj := fmt.Sprint(json.Marshal(loc)), fmt.Sprint(json.Marshal(rem)); lj != rj {
		t.Errorf("session remote differs")
	}
	bad := Options{Claims: demoClaims(t), Mode: report.ModeQuick}
	bad.Remote = func(ctx context.Context, jobs []Job, add func(int64)) ([]Figures, error) {
		return []Figures{{Module: jobs[0].Module}, {Module: jobs[0].Module}}, nil
	}
	if _, err := Run(context.Background(), source.Dir(dir), ".", bad); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate answer: %v", err)
	}
	bad.Remote = func(ctx context.Context, jobs []Job, add func(int64)) ([]Figures, error) {
		return []Figures{{Module: jobs[0].Module}}, nil
	}
	if _, err := Run(context.Background(), source.Dir(dir), ".", bad); err == nil || !strings.Contains(err.Error(), "unchecked") {
		t.Errorf("missing answers: %v", err)
	}
	if err := CheckPairs(context.Background(), source.Dir(dir), ".", Options{}, []string{"model.layers.0.nope"}, func(Figures) {}); err == nil {
		t.Error("CheckPairs accepted a module the adapter does not have")
	}
}

func mode(o Options) string {
	if o.Mode == "" {
		return "exact"
	}
	return string(o.Mode)
}

func codes(res *Result, sev report.Severity) []string {
	set := map[report.Code]bool{}
	for _, f := range res.Findings {
		if f.Severity == sev {
			set[f.Code] = true
		}
	}
	var out []string
	for c := range set {
		out = append(out, string(c))
	}
	sort.Strings(out)
	return out
}

const (
	large = "base_model.model.model.language_model.layers.41.mlp.gate_proj"
	small = "base_model.model.model.language_model.layers.40.linear_attn.in_proj_a"
)

func TestGenuineWorldPasses(t *testing.T) {
	for _, quick := range []bool{false, true} {
		res := run(t, filepath.Join(worldDir, world.AdapterDir), Options{Claims: demoClaims(t), Mode: map[bool]report.Mode{true: report.ModeQuick}[quick]})
		if res.Verdict != "pass" {
			t.Fatalf("quick=%v verdict %s: %v", quick, res.Verdict, res.Findings)
		}
		s := res.Summary
		d := demoClaims(t).Derived()
		if s.Pairs != d.Pairs || s.Parameters != d.Parameters || s.Bytes != d.Bytes || s.Large != d.Large || len(s.Layers) != 24 {
			t.Errorf("summary %+v, claims imply %+v", s, d)
		}
		if !quick {
			for _, m := range res.Matrices {
				if m.Sigma == nil || m.ReportSV == nil || *m.ReportSV > 0.5 || *m.FormDev > Default.Form/2 {
					t.Fatalf("%s: σ=%v reportSV=%v form=%v", m.Module, m.Sigma != nil, m.ReportSV, m.FormDev)
				}
			}
		}
	}
}

// TestSpectrumAgainstReport checks the audit's singular values against the
// report's, which the generator computed by an SVD of the explicit
// difference of the checkpoints (gonum mat.SVD): an independent route. It
// fails when the fixture is missing or empty, and checks that every pair
// the claims call for was compared.
func TestSpectrumAgainstReport(t *testing.T) {
	res := run(t, filepath.Join(worldDir, world.AdapterDir), Options{})
	var rep struct {
		Matrices []struct {
			Module         string    `json:"module"`
			SingularValues []float64 `json:"singular_values"`
		} `json:"matrices"`
	}
	data, err := os.ReadFile(filepath.Join(worldDir, world.AdapterDir, "extraction-report.json"))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	byMod := map[string][]float64{}
	for _, m := range rep.Matrices {
		byMod[m.Module] = m.SingularValues
	}
	worst := 0.0
	matrices, values := 0, 0
	for _, m := range res.Matrices {
		want := byMod[m.Module]
		if len(want) == 0 || want[0] <= 0 {
			t.Errorf("%s: the report has no singular values for it", m.Module)
			continue
		}
		if len(m.Sigma) < len(want) {
			t.Errorf("%s: the audit gives %d singular values, the report %d", m.Module, len(m.Sigma), len(want))
			continue
		}
		matrices++
		for i := range want {
			if want[i] > 0.01*want[0] {
				worst = max(worst, math.Abs(m.Sigma[i]-want[i])/want[i])
				values++
			}
		}
	}
	if d := demoClaims(t).Derived(); matrices != d.Pairs || len(rep.Matrices) != d.Pairs {
		t.Fatalf("compared %d matrices (the report lists %d), the claims call for %d", matrices, len(rep.Matrices), d.Pairs)
	}
	// bf16 factors: a few parts in 2⁸ at most.
	if worst > 1.0/128 {
		t.Errorf("worst relative σ deviation %.3g", worst)
	}
	t.Logf("%d matrices, %d singular values compared; worst relative deviation from the report: %.3g", matrices, values, worst)
}

func TestGenuineVariantsPass(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(t *testing.T, a *adapter) int // returns shard count
	}{
		{"sharded", func(t *testing.T, a *adapter) int { return 3 }},
		{"adapter name in keys", func(t *testing.T, a *adapter) int {
			for i := range a.tensors {
				a.tensors[i].Name = strings.TrimSuffix(a.tensors[i].Name, ".weight") + ".default.weight"
			}
			return 1
		}},
		{"no prefix", func(t *testing.T, a *adapter) int {
			for i := range a.tensors {
				a.tensors[i].Name = strings.TrimPrefix(a.tensors[i].Name, "base_model.model.")
			}
			return 1
		}},
		{"rsLoRA, same scaling", func(t *testing.T, a *adapter) int {
			a.config["use_rslora"] = true
			a.config["lora_alpha"] = 4.0 // 4/√16 = 1 = 16/16
			return 1
		}},
		{"regex target_modules", func(t *testing.T, a *adapter) int {
			a.config["target_modules"] = `.*\.layers\.(4[0-9]|5[0-9]|6[0-3])\..*(proj|proj_[a-z]+)`
			delete(a.config, "layers_to_transform")
			return 1
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := load(t)
			dir := a.write(t, c.mutate(t, a))
			res := run(t, dir, Options{Claims: demoClaims(t)})
			if res.Verdict != "pass" {
				t.Fatalf("verdict %s: %v", res.Verdict, res.Findings)
			}
		})
	}
}

// TestEveryCode triggers each finding code with a tampered copy.
func TestEveryCode(t *testing.T) {
	cases := []struct {
		code    report.Code
		sev     report.Severity
		verdict string
		mutate  func(t *testing.T, a *adapter) (dir string)
		subject string
	}{
		{report.FileUnreadable, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			dir := a.write(t, 1)
			os.Remove(filepath.Join(dir, "adapter_model.safetensors"))
			return dir
		}, "adapter_model"},
		{report.HeaderInvalid, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			dir := a.write(t, 1)
			p := filepath.Join(dir, "adapter_model.safetensors")
			b, _ := os.ReadFile(p)
			copy(b[8:], `{"x":[`)
			os.WriteFile(p, b, 0o644)
			return dir
		}, "adapter_model.safetensors"},
		{report.DataLayout, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			dir := a.write(t, 1)
			f, _ := os.OpenFile(filepath.Join(dir, "adapter_model.safetensors"), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte("<html>polyglot</html>"))
			f.Close()
			return dir
		}, "adapter_model.safetensors"},
		{report.ConfigInvalid, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			a.config["use_dora"] = true
			return a.write(t, 1)
		}, "adapter_config.json"},
		{report.ConfigMismatch, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			a.config["layers_to_transform"] = []int{40, 41, 42}
			return a.write(t, 1)
		}, "model.language_model.layers.50.mlp.gate_proj"},
		{report.PairMissing, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			a.remove(large + ".lora_B.weight")
			return a.write(t, 1)
		}, strings.TrimPrefix(large, "base_model.model.")},
		{report.PairUnexpected, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			x := *a.find(t, large+".lora_A.weight")
			y := *a.find(t, large+".lora_B.weight")
			x.Name = strings.Replace(x.Name, "layers.41", "layers.39", 1)
			y.Name = strings.Replace(y.Name, "layers.41", "layers.39", 1)
			a.tensors = append(a.tensors, x, y)
			return a.write(t, 1)
		}, "model.language_model.layers.39.mlp.gate_proj"},
		{report.ShapeMismatch, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			x := a.find(t, large+".lora_A.weight")
			x.Shape = []int64{x.Shape[1], x.Shape[0]} // transposed
			return a.write(t, 1)
		}, strings.TrimPrefix(large, "base_model.model.")},
		{report.DtypeUnexpected, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			x := a.find(t, large+".lora_A.weight")
			vals := make([]float32, len(x.Data)/2)
			dtype.Decode32("BF16", x.Data, vals)
			x.DType, x.Data = "F32", dtype.EncodeF32(nil, vals)
			return a.write(t, 1)
		}, large + ".lora_A.weight"},
		{report.ValuesNonfinite, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			x := a.find(t, large+".lora_B.weight")
			binary.LittleEndian.PutUint16(x.Data[100:], 0x7fc0) // NaN
			return a.write(t, 1)
		}, large + ".lora_B.weight"},
		{report.ParamsMismatch, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			a.remove(small + ".lora_A.weight")
			a.remove(small + ".lora_B.weight")
			return a.write(t, 1)
		}, "adapter_model"},
		{report.RankDeficient, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			x := a.find(t, large+".lora_A.weight")
			in := int(x.Shape[1])
			clear(x.Data[3*in*2 : 4*in*2]) // row 3 of A: one direction gone
			a.report = nil
			return a.write(t, 1)
		}, strings.TrimPrefix(large, "base_model.model.")},
		{report.FactorForm, report.Warn, "warn", func(t *testing.T, a *adapter) string {
			// The same product, but the scale moved between the factors.
			a.scale(t, large+".lora_A.weight", 2)
			a.scale(t, large+".lora_B.weight", 0.5)
			return a.write(t, 1)
		}, strings.TrimPrefix(large, "base_model.model.")},
		{report.ReportMismatch, report.Fail, "fail", func(t *testing.T, a *adapter) string {
			a.scale(t, large+".lora_B.weight", 1.1) // a 10 % change in one pair
			return a.write(t, 1)
		}, strings.TrimPrefix(large, "base_model.model.")},
		{report.ExtraTensors, report.Warn, "warn", func(t *testing.T, a *adapter) string {
			a.tensors = append(a.tensors, safetensors.Tensor{Spec: safetensors.Spec{Name: "base_model.model.score.weight", DType: "BF16", Shape: []int64{2, 4}}, Data: make([]byte, 16)})
			return a.write(t, 1)
		}, "base_model.model.score.weight"},
	}
	for _, c := range cases {
		t.Run(string(c.code), func(t *testing.T) {
			a := load(t)
			dir := c.mutate(t, a)
			res := run(t, dir, Options{Claims: demoClaims(t)})
			// The randomized mode reaches the same verdict and findings.
			rnd := run(t, dir, Options{Claims: demoClaims(t), Mode: report.ModeRandomized})
			if rnd.Verdict != res.Verdict || fmt.Sprint(findingKeys(rnd)) != fmt.Sprint(findingKeys(res)) {
				t.Errorf("randomized mode: %s %v\nexact: %s %v", rnd.Verdict, findingKeys(rnd), res.Verdict, findingKeys(res))
			}
			// Checked by two "workers" through JSON (as the browser does): the same.
			rem := run(t, dir, Options{Claims: demoClaims(t), Remote: remoteShards(t, dir, Options{Claims: demoClaims(t)}, 2)})
			if rem.Verdict != res.Verdict || fmt.Sprint(findingKeys(rem)) != fmt.Sprint(findingKeys(res)) {
				t.Errorf("remote: %s %v\nexact: %s %v", rem.Verdict, findingKeys(rem), res.Verdict, findingKeys(res))
			}
			if string(res.Verdict) != c.verdict {
				t.Errorf("verdict %s, want %s: %v", res.Verdict, c.verdict, res.Findings)
			}
			found := false
			for _, f := range res.Findings {
				if f.Code == c.code && f.Severity == c.sev && strings.Contains(f.Subject, c.subject) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s %s about %s in %v", c.sev, c.code, c.subject, res.Findings)
			}
		})
	}
}

// TestRebuild covers rebuild.error and the identity check on the world.
func TestRebuild(t *testing.T) {
	base, tuned := source.Dir(filepath.Join(worldDir, world.BaseDir)), source.Dir(filepath.Join(worldDir, world.TunedDir))
	res, err := rebuild.Run(context.Background(), rebuild.Options{Adapter: source.Dir(filepath.Join(worldDir, world.AdapterDir)), Base: base, Tuned: tuned, Claims: demoClaims(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "pass" || len(res.Differing) != 186 || res.Compared != demoClaims(t).TensorsCompared || len(res.Matrices) != 186 {
		t.Fatalf("genuine: %s, %d differing, %d compared, %d rebuilt: %v", res.Verdict, len(res.Differing), res.Compared, len(res.Matrices), res.Findings)
	}
	// A 1 % change in one pair (both factors scaled, so still in SVD form) passes the spectral audit's tolerance but
	// leaves a residual far above the bf16 noise.
	a := load(t)
	a.scale(t, large+".lora_A.weight", 1.005)
	a.scale(t, large+".lora_B.weight", 1.005)
	dir := a.write(t, 1)
	if r := run(t, dir, Options{Claims: demoClaims(t)}); r.Verdict != "pass" {
		t.Fatalf("the audit alone should not see a 1%% change: %v", r.Findings)
	}
	res, err = rebuild.Run(context.Background(), rebuild.Options{Adapter: source.Dir(dir), Base: base, Tuned: tuned, Claims: demoClaims(t)})
	if err != nil {
		t.Fatal(err)
	}
	hit := map[string]bool{}
	for _, f := range res.Findings {
		hit[string(f.Code)+" "+f.Subject] = true
	}
	mod := strings.TrimPrefix(large, "base_model.model.")
	if res.Verdict != "fail" || !hit[string(report.RebuildError)+" "+mod] || !hit[string(report.ReportMismatch)+" "+mod] {
		t.Fatalf("tampered: %s %v", res.Verdict, res.Findings)
	}
	// A pair removed: the differing tensor has no pair.
	a = load(t)
	a.remove(large + ".lora_A.weight")
	a.remove(large + ".lora_B.weight")
	res, _ = rebuild.Run(context.Background(), rebuild.Options{Adapter: source.Dir(a.write(t, 1)), Base: base, Tuned: tuned})
	found := false
	for _, f := range res.Findings {
		found = found || (f.Code == report.PairMissing && f.Subject == mod)
	}
	if !found {
		t.Errorf("no pair.missing for %s: %v", mod, res.Findings)
	}
}

func TestNoClaimsNoReport(t *testing.T) {
	a := load(t)
	a.report = nil
	res := run(t, a.write(t, 1), Options{})
	if res.Verdict != "pass" || res.Summary.Expectations != "the tensors themselves" {
		t.Fatalf("%s %s %v", res.Verdict, res.Summary.Expectations, res.Findings)
	}
	// The JSON form is what the CLI prints: it must marshal.
	if _, err := json.Marshal(res); err != nil {
		t.Fatal(err)
	}
}

func findingKeys(r *Result) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Severity)+" "+string(f.Code)+" "+f.Subject)
	}
	sort.Strings(out)
	return out
}

// TestInventoryFirst: OnInventory sees every pair before any value is read.
func TestInventoryFirst(t *testing.T) {
	var inv *Result
	res := run(t, filepath.Join(worldDir, world.AdapterDir), Options{Claims: demoClaims(t), OnInventory: func(r *Result) {
		if r.Matrices[0].Sigma == nil && r.Matrices[0].NormA == 0 {
			inv = r
		}
	}})
	if inv == nil || inv.Verdict != "running" || len(inv.Matrices) != 186 || inv.Summary.Parameters != res.Summary.Parameters {
		t.Fatalf("inventory %+v", inv)
	}
	if res.Verdict != "pass" {
		t.Fatalf("verdict %s", res.Verdict)
	}
}

// TestScanKernelHook: an installed bf16 scan is used by the quick audit
// (here the portable one, counted) with the same result, and reported.
func TestScanKernelHook(t *testing.T) {
	dir := filepath.Join(worldDir, world.AdapterDir)
	// The reference is the portable loop (a native SIMD scan, when one is
	// active, rounds its sums in another order).
	prev := dtype.ScanKernels.Name()
	defer dtype.ScanKernels.Use(prev)
	dtype.ScanKernels.Reset()
	want := run(t, dir, Options{Mode: report.ModeQuick})
	var calls atomic.Int64 // the workers call it at once
	dtype.ScanKernels.Install("counted", func(b []byte) (int, float64) {
		if len(b)%16 != 0 {
			t.Errorf("the kernel got %d bytes, not whole vectors", len(b))
		}
		calls.Add(1)
		return dtype.ScanBF16(b)
	})
	got := run(t, dir, Options{Mode: report.ModeQuick})
	if calls.Load() == 0 || got.Summary.Kernel != "scan counted" || got.Verdict != want.Verdict {
		t.Fatalf("%d calls, kernel %q, verdict %s (want %s)", calls.Load(), got.Summary.Kernel, got.Verdict, want.Verdict)
	}
	for i, m := range got.Matrices {
		if w := want.Matrices[i]; math.Abs(m.NormA-w.NormA) > 1e-12*w.NormA || m.Nonfinite != w.Nonfinite {
			t.Fatalf("%s: ‖A‖ %g, want %g", m.Module, m.NormA, w.NormA)
		}
	}
}
