package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"sort"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/peft"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// MaxListed bounds the findings listed one by one for the same kind of
// tensor (a header may name 100,000 stray tensors); the rest are counted
// in one more finding.
const MaxListed = 100

func (a *auditor) loadConfig(fsys fs.FS, dir string) {
	name := path.Join(dir, "adapter_config.json")
	cfg, err := peft.ReadConfig(fsys, name)
	if err != nil && findings.CouldNot(err) {
		a.fatal = err
		return
	}
	a.noConfig = errors.Is(err, fs.ErrNotExist)
	if errors.Is(err, peft.ErrUnreadable) {
		a.c.Addf(report.ConfigInvalid, report.Fail, name, nil, nil, "adapter_config.json cannot be read: %v", err)
		return
	}
	if err != nil {
		a.c.Findings = append(a.c.Findings, findings.Of(err, name)...)
		return
	}
	a.cfg = cfg
	a.c.Findings = append(a.c.Findings, cfg.Problems()...)
	s := &a.res.Summary
	s.Rank, s.Alpha, s.RSLoRA, s.Unknown = cfg.R, cfg.Alpha, cfg.UseRSLoRA, cfg.UnknownFields()
	s.Scaling = cfg.Scaling("")
	if len(s.Unknown) > 0 {
		a.c.Addf(report.ConfigUnknown, report.Info, name, s.Unknown, nil, "fields kept but not interpreted: %s", strings.Join(s.Unknown, ", "))
	}
	if p := a.opt.Claims; p != nil {
		if cfg.R != p.Rank {
			a.c.Addf(report.ConfigMismatch, report.Fail, name, cfg.R, p.Rank, "r is %d, the claims say %d", cfg.R, p.Rank)
		}
		want := p.Alpha / float64(p.Rank)
		got := cfg.Scaling("")
		if math.Abs(got-want) > 1e-9*want {
			a.c.Addf(report.ConfigMismatch, report.Fail, name, got, want, "scaling is %g (lora_alpha %g, use_rslora=%v), the claims imply %g", got, cfg.Alpha, cfg.UseRSLoRA, want)
		} else if cfg.Alpha != p.Alpha {
			// ΔW is the same; only the bookkeeping differs (e.g. rsLoRA).
			a.c.Addf(report.ConfigMismatch, report.Info, name, cfg.Alpha, p.Alpha, "lora_alpha is %g where the claims say %g, but the scaling is the same (%g)", cfg.Alpha, p.Alpha, got)
		}
	}
}

func (a *auditor) loadReport(fsys fs.FS, dir string) {
	if a.opt.Report != nil {
		a.rep = a.opt.Report
		a.res.Summary.Report = a.opt.ReportName
		return
	}
	if a.opt.NoAutoReport {
		return
	}
	name := path.Join(dir, "extraction-report.json")
	if !source.Exists(fsys, name) {
		return
	}
	data, err := source.ReadSmall(fsys, name, extraction.MaxSize)
	if err != nil {
		a.c.Findings = append(a.c.Findings, findings.Of(err, name)...)
		return
	}
	rep, err := extraction.ParseYield(data, name, a.yield)
	if err != nil {
		a.c.Findings = append(a.c.Findings, findings.Of(err, name)...)
		return
	}
	a.rep, a.res.Summary.Report = rep, name
}

// expected returns the pairs the adapter should hold and where that comes from.
func (a *auditor) expected() (map[string]claims.Pair, string) {
	if p := a.opt.Claims; p != nil {
		m := map[string]claims.Pair{}
		for _, pr := range p.Pairs() {
			m[pr.Module] = pr
		}
		return m, "claims " + p.Name
	}
	if a.rep != nil && len(a.rep.Matrices) > 0 {
		m := map[string]claims.Pair{}
		for _, x := range a.rep.Matrices {
			pr := claims.Pair{Module: x.Module, Short: peft.ShortModule(x.Module), Layer: -1}
			if len(x.Shape) == 2 {
				pr.Out, pr.In = x.Shape[0], x.Shape[1]
			}
			m[x.Module] = pr
		}
		return m, "extraction report"
	}
	return nil, "the tensors themselves"
}

func (a *auditor) inventory() {
	s := &a.res.Summary
	type halves struct{ a, b *safetensors.TensorInfo }
	pairs := map[string]*halves{}
	adapters := map[string]bool{}
	var extra []string
	for _, name := range a.ck.Names() {
		t, _, _ := a.ck.Tensor(name)
		s.Tensors++
		s.DTypes[t.DType]++
		k := peft.ParseKey(name)
		switch k.Kind {
		case peft.KindLoRA:
			adapters[k.Adapter] = true
			h := pairs[k.Module]
			if h == nil {
				h = &halves{}
				pairs[k.Module] = h
			}
			tt := t
			if k.Half == peft.HalfA {
				if h.a != nil {
					a.c.Addf(report.HeaderInvalid, report.Fail, name, nil, nil, "second lora_A for %s (adapter names differ)", k.Module)
				}
				h.a = &tt
			} else {
				if h.b != nil {
					a.c.Addf(report.HeaderInvalid, report.Fail, name, nil, nil, "second lora_B for %s (adapter names differ)", k.Module)
				}
				h.b = &tt
			}
		case peft.KindEmbedding:
			extra = append(extra, name)
			if len(extra) <= MaxListed {
				a.c.Addf(report.ExtraTensors, report.Warn, name, t.Shape, nil, "embedding LoRA factor (%s %v): inventoried, not audited as a linear pair", t.DType, t.Shape)
			}
		default:
			extra = append(extra, name)
			if len(extra) <= MaxListed {
				a.c.Addf(report.ExtraTensors, report.Warn, name, t.Shape, nil, "not a LoRA factor (%s %v): a full copy of a module (modules_to_save) replaces the base weight outright", t.DType, t.Shape)
			}
		}
	}
	s.Extra = len(extra)
	if len(extra) > MaxListed {
		a.c.Addf(report.ExtraTensors, report.Warn, "adapter_model", len(extra), nil, "%d more tensors that are not LoRA pairs are not listed one by one (audit.MaxListed = %d)", len(extra)-MaxListed, MaxListed)
	}
	if len(adapters) > 1 {
		var names []string
		for n := range adapters {
			names = append(names, fmt.Sprintf("%q", n))
		}
		sort.Strings(names)
		shown := names
		if len(shown) > 8 {
			shown = append(shown[:8:8], fmt.Sprintf("and %d more", len(names)-8))
		}
		for i := range shown {
			shown[i] = report.Clip(shown[i], 80)
		}
		a.c.Addf(report.HeaderInvalid, report.Warn, "adapter_model", len(names), nil, "tensor keys name several adapters: %s", strings.Join(shown, ", "))
	}
	want, from := a.expected()
	s.Expectations = from
	claimDT := ""
	if a.opt.Claims != nil {
		claimDT = a.opt.Claims.DType
	}
	layers := map[int]bool{}
	modules := map[string]bool{}
	a.byName = map[string]*Matrix{}
	var mods []string
	for m := range pairs {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, mod := range mods {
		h := pairs[mod]
		if h.a == nil || h.b == nil {
			have, miss := "lora_B", "lora_A"
			if h.a != nil {
				have, miss = "lora_A", "lora_B"
			}
			a.c.Addf(report.PairMissing, report.Fail, mod, have, "lora_A and lora_B", "has %s but no %s", have, miss)
			continue
		}
		m := &Matrix{Module: mod, Short: peft.ShortModule(mod), DTypeA: h.a.DType, DTypeB: h.b.DType, Layer: -1}
		a.keys[m] = [2]string{h.a.Name, h.b.Name}
		if a.cfg != nil {
			if l, ok := a.cfg.LayerOf(mod); ok {
				m.Layer = l
			}
		} else if l, ok := (&peft.Config{}).LayerOf(mod); ok {
			m.Layer = l
		}
		r := a.rankFor(mod, h.a, h.b)
		m.Rank = r
		m.Scaling = 1
		if a.cfg != nil {
			m.Scaling = a.cfg.Scaling(mod)
		}
		okShape := true
		if len(h.a.Shape) != 2 || len(h.b.Shape) != 2 {
			a.c.Addf(report.ShapeMismatch, report.Fail, mod, fmt.Sprintf("A %v, B %v", h.a.Shape, h.b.Shape), "2-D factors", "factors are not matrices: lora_A %v, lora_B %v", h.a.Shape, h.b.Shape)
			okShape = false
		} else {
			m.In, m.Out = int(h.a.Shape[1]), int(h.b.Shape[0])
			if int(h.a.Shape[0]) != r || int(h.b.Shape[1]) != r {
				a.c.Addf(report.ShapeMismatch, report.Fail, mod, fmt.Sprintf("A %v, B %v", h.a.Shape, h.b.Shape), fmt.Sprintf("A [%d, in], B [out, %d]", r, r),
					"factor shapes do not fit r = %d: lora_A %v, lora_B %v", r, h.a.Shape, h.b.Shape)
				okShape = false
			}
		}
		m.Params = h.a.Len() + h.b.Len()
		s.Parameters += m.Params
		s.Bytes += h.a.Bytes() + h.b.Bytes()
		if okShape {
			m.Large = m.Out > r && m.In > r
			if m.Large {
				s.Large++
			} else {
				s.Small++
			}
		}
		for _, t := range []*safetensors.TensorInfo{h.a, h.b} {
			switch {
			case !dtype.Decodable(t.DType) || t.DType == "BOOL" || strings.HasPrefix(t.DType, "I") || strings.HasPrefix(t.DType, "U"):
				a.c.Addf(report.DtypeUnexpected, report.Fail, t.Name, t.DType, "a float type", "%s is not a float type the audit can read", t.DType)
				m.Skipped = "dtype " + t.DType
			case claimDT != "" && t.DType != claimDT:
				a.c.Addf(report.DtypeUnexpected, report.Fail, t.Name, t.DType, claimDT, "dtype is %s, the claims say %s", t.DType, claimDT)
			}
		}
		if okShape && (h.a.Len() == 0 || h.b.Len() == 0) {
			// Nothing to check is not a pass: a factor with a zero
			// dimension holds no values, and its r × r Grams would be
			// justified by no byte of the file.
			a.c.Addf(report.ShapeMismatch, report.Fail, mod, fmt.Sprintf("A %v, B %v", h.a.Shape, h.b.Shape), "factors with elements",
				"a factor has no elements (lora_A %v, lora_B %v): the pair holds nothing to check", h.a.Shape, h.b.Shape)
			m.Skipped = "empty"
		}
		if !okShape && m.Skipped == "" {
			m.Skipped = "shape"
		}
		if m.Layer >= 0 {
			layers[m.Layer] = true
		}
		modules[m.Short] = true
		if a.cfg != nil && !a.cfg.TargetsModule(mod) {
			a.c.Addf(report.ConfigMismatch, report.Fail, mod, nil, nil, "the config's target_modules/layers_to_transform do not select this module, yet it has a pair")
		}
		if want != nil {
			pr, ok := want[mod]
			if !ok {
				a.c.Addf(report.PairUnexpected, report.Fail, mod, nil, nil, "a pair for a module outside %s", from)
			} else if okShape && pr.Out > 0 && (pr.Out != m.Out || pr.In != m.In) {
				a.c.Addf(report.ShapeMismatch, report.Fail, mod, []int{m.Out, m.In}, []int{pr.Out, pr.In}, "ΔW is %d × %d, %s says %d × %d", m.Out, m.In, from, pr.Out, pr.In)
			}
		}
		a.byName[mod] = m
		a.res.Matrices = append(a.res.Matrices, m)
	}
	s.Pairs = len(a.res.Matrices)
	if s.Pairs == 0 {
		// An adapter with nothing to check never passes, whatever the mode.
		what := "the adapter has no tensors"
		if s.Tensors > 0 {
			what = fmt.Sprintf("none of the adapter's %d tensors form a LoRA pair", s.Tensors)
		}
		a.c.Addf(report.PairMissing, report.Fail, "adapter_model", 0, "at least one lora_A/lora_B pair", "the adapter has no LoRA pair: %s, so there is nothing to check", what)
	}
	for l := range layers {
		s.Layers = append(s.Layers, l)
	}
	sort.Ints(s.Layers)
	for m := range modules {
		s.Modules = append(s.Modules, m)
	}
	sort.Strings(s.Modules)
	if want != nil {
		var miss []string
		for mod := range want {
			if pairs[mod] == nil {
				miss = append(miss, mod)
			}
		}
		sort.Strings(miss)
		for _, mod := range miss {
			a.c.Addf(report.PairMissing, report.Fail, mod, nil, "lora_A and lora_B", "%s calls for a pair here; the adapter has none", from)
		}
	}
	if a.cfg != nil && a.opt.Claims != nil {
		for _, pr := range a.opt.Claims.Pairs() {
			if !a.cfg.TargetsModule(pr.Module) {
				a.c.Addf(report.ConfigMismatch, report.Fail, pr.Module, nil, nil, "the claims call for this module but the config does not target it")
			}
		}
	}
	if p := a.opt.Claims; p != nil {
		d := p.Derived()
		if s.Parameters != d.Parameters {
			a.c.Addf(report.ParamsMismatch, report.Fail, "adapter_model", s.Parameters, d.Parameters, "%d parameters in the pairs, the claims' module table implies %d", s.Parameters, d.Parameters)
		}
		if s.Bytes != d.Bytes {
			a.c.Addf(report.ParamsMismatch, report.Fail, "adapter_model", s.Bytes, d.Bytes, "%d bytes of factor data, the claims imply %d", s.Bytes, d.Bytes)
		}
		if s.Pairs != d.Pairs {
			a.c.Addf(report.ParamsMismatch, report.Fail, "adapter_model", s.Pairs, d.Pairs, "%d pairs, the claims imply %d", s.Pairs, d.Pairs)
		}
	}
}

// rankFor is the r a module's factors must have: the config's (with
// rank_pattern), or, without a config, lora_A's first dimension.
func (a *auditor) rankFor(mod string, ta, tb *safetensors.TensorInfo) int {
	if a.cfg != nil {
		return a.cfg.RankOf(mod)
	}
	if len(ta.Shape) == 2 {
		return int(ta.Shape[0])
	}
	return 0
}
