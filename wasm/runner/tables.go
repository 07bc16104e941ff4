package runner

import (
	"fmt"
	"strings"
	"sync"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/peft"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// RowsPerPage is a table page's length.
const RowsPerPage = 25

// The last table of each id a job made (the engine worker is long-lived:
// the pages ask it for other views of them).
var (
	tablesMu   sync.Mutex
	lastTables = map[string]*report.Table{}
)

// keepTables keeps the tables and returns their first pages.
func keepTables(ts []*report.Table) []*report.TablePage {
	tablesMu.Lock()
	defer tablesMu.Unlock()
	var out []*report.TablePage
	for _, t := range ts {
		lastTables[t.ID] = t
		out = append(out, t.PageOf(report.View{}, RowsPerPage))
	}
	return out
}

// tableJob answers a view of a kept table: its page, or all it keeps as
// CSV.
func tableJob(spec *jobs.Spec) (*jobs.Output, error) {
	tablesMu.Lock()
	t := lastTables[spec.Table]
	tablesMu.Unlock()
	if t == nil {
		return nil, fmt.Errorf("no table %q: run the check first", report.Clip(spec.Table, 40))
	}
	var v report.View
	if spec.View != nil {
		v = *spec.View
	}
	if spec.CSV {
		return &jobs.Output{CSV: t.CSV(t.Shown(v))}, nil
	}
	return &jobs.Output{Tables: []*report.TablePage{t.PageOf(v, RowsPerPage)}}, nil
}

// Tables are a job's results as the pages show them (report.Table): the
// engine formats every cell and explains every column, so that the pages
// only draw, sort, filter and export them.
func Tables(out *jobs.Output) []*report.Table {
	var ts []*report.Table
	switch {
	case out.Audit != nil:
		a := out.Audit
		ts = append(ts, findingsGrid(a.Findings), pairsTable(a))
		if a.Rebuild != nil {
			ts = append(ts, rebuildTable(a.Rebuild))
		}
		ts = append(ts, provenanceTables(a.Provenance)...)
	case out.Rebuild != nil:
		ts = append(ts, rebuildTable(out.Rebuild))
	case out.Hidden != nil:
		ts = append(ts, hiddenLayers(out.Hidden), hiddenTable(out.Hidden))
	case out.Decisions != nil:
		ts = append(ts, decisionsTable(out.Decisions.Records))
	case out.Codes != nil:
		ts = append(ts, codesTable(out.Codes))
	}
	return ts
}

var none = report.NoValue

func num(x float64, format string) report.Cell { return report.NumCell(x, fmt.Sprintf(format, x)) }

// worstOf maps each subject (without base_model.model.) to the worst
// severity of the findings about it.
func worstOf(fs []report.Finding) map[string]report.Severity {
	rank := map[report.Severity]int{report.Fail: 4, report.Unchecked: 3, report.Warn: 2, report.Info: 1}
	w := map[string]report.Severity{}
	for _, f := range fs {
		k := strings.TrimPrefix(f.Subject, "base_model.model.")
		for _, h := range []string{".lora_A", ".lora_B"} {
			if i := strings.Index(k, h); i > 0 {
				k = k[:i]
			}
		}
		if rank[f.Severity] > rank[w[k]] {
			w[k] = f.Severity
		}
	}
	return w
}

// statusOf is the status cell and the row's class for a subject.
func statusOf(w map[string]report.Severity, subject string) (report.Cell, string, bool) {
	sev := w[subject]
	if sev == "" {
		return report.StatusCell("ok"), "", false
	}
	return report.StatusCell(string(sev)), report.SevClass(sev), sev == report.Fail
}

func shapeCell(out, in int) report.Cell {
	c := report.NumCell(float64(out)*float64(in), fmt.Sprintf("%d × %d", out, in))
	s := fmt.Sprintf("%dx%d", out, in)
	c.CSV = &s
	return c
}

// moduleCell shows a module as its type (mlp.gate_proj) when its layer
// has a column of its own; the CSV keeps the full path.
func moduleCell(module string) report.Cell {
	full := report.Clip(module, 200)
	c := report.TextCell(full)
	if layerOf(module) >= 0 {
		c.T, c.CSV = peft.ShortModule(module), &full
	}
	return c
}

func layerCell(l int) report.Cell {
	if l < 0 {
		return none
	}
	return report.NumCell(float64(l), fmt.Sprint(l))
}

func findingsGrid(fs []report.Finding) *report.Table {
	t := &report.Table{ID: "findings", Name: "clefcheck-findings", Cols: []report.Column{
		{Name: "severity", Tip: "✗ fail: the artifact is wrong; ! warn: suspicious; i info: noted; ? error: could not be checked (says nothing about the artifact)", Num: true},
		{Name: "code", Tip: "the stable finding code; its link says what it means and what to do", Kind: "code"},
		{Name: "subject", Tip: "what the finding is about: a module, a tensor, a file"},
		{Name: "message", Tip: "what was measured, against what was expected"},
	}}
	for i, f := range fs {
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{report.StatusCell(string(f.Severity)), report.TextCell(string(f.Code)),
			report.TextCell(report.Clip(f.Subject, 100)), report.TextCell(report.Clip(f.Message, 400))},
			Class: report.SevClass(f.Severity), Failing: f.Severity == report.Fail, Layer: -1, Module: string(f.Severity), Ref: i})
	}
	return t
}

func pairsTable(a *report.Audit) *report.Table {
	t := &report.Table{ID: "matrices", Name: "clefcheck-pairs", Group: "module", Cols: []report.Column{
		{Name: "status", Tip: "the worst finding about this pair: ✗ fail, ! warn, i info, ✓ ok", Num: true},
		{Name: "module", Tip: "the module the pair adapts, under its layer (the CSV has its full path)"},
		{Name: "layer", Tip: "the decoder layer", Num: true},
		{Name: "out × in", Tip: "the shape of ΔW = s·B·A (B is out × r, A is r × in); sorts by out·in", Num: true},
		{Name: "r", Tip: "the factors' rank, from their shapes", Num: true},
		{Name: "rank", Tip: "numerical rank of ΔW: the singular values above σ₁·max(max(out, in)·2⁻²³, 2⁻¹⁰); below r for a large matrix is rank.deficient", Num: true},
		{Name: "σ₁", Tip: "the largest singular value of ΔW = s·B·A", Num: true},
		{Name: "spectrum", Tip: "σᵢ/σ₁ for i = 1…r, on a log scale from 10⁻³ to 1", Kind: "spectrum"},
		{Name: "form dev.", Tip: "SVD-form deviation: how far A·Aᵀ and Bᵀ·B are from one diagonal matrix (A = √S·Vᵀ, B = U·√S); tolerance 2⁻⁶ ≈ 0.0156, above it is factor.form", Num: true},
		{Name: "report σ / tol", Tip: "the largest |σᵢ − σᵢ in extraction-report.json| in units of its tolerance 2⁻⁶·σᵢ + 2⁻¹⁰·σ₁: ≤ 1 passes, above is report.mismatch", Num: true},
		{Name: "method", Tip: "how the spectrum was found: gram (the exact r × r Gram matrices) or probes ±x% (randomized probes: every σᵢ within ±x%)"},
	}}
	w := worstOf(a.Findings)
	for i, m := range a.Matrices {
		st, cls, failing := statusOf(w, m.Module)
		rk, sig, fd, rs := none, none, none, none
		if len(m.Sigma) > 0 {
			rk, sig = report.NumCell(float64(m.NumRank), fmt.Sprint(m.NumRank)), num(m.Sigma[0], "%.4g")
		}
		if m.FormDev != nil {
			fd = num(*m.FormDev, "%.2g")
		}
		if m.ReportSV != nil {
			rs = num(*m.ReportSV, "%.2f")
		}
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{st, moduleCell(m.Module), layerCell(m.Layer), shapeCell(m.Out, m.In),
			report.NumCell(float64(m.Rank), fmt.Sprint(m.Rank)), rk, sig, report.TextCell(""), fd, rs, methodCell(m)},
			Class: cls, Failing: failing, Layer: m.Layer, Module: m.Short, Ref: i})
	}
	return t
}

func methodCell(m *report.AuditMatrix) report.Cell {
	if s := methodOf(m); s != "–" {
		return report.TextCell(s)
	}
	return none
}

func methodOf(m *report.AuditMatrix) string {
	switch {
	case m.Method == "probes" && m.SigmaBound != nil:
		return fmt.Sprintf("probes ±%.2g%%", 100**m.SigmaBound)
	case m.Method != "":
		return m.Method
	}
	return "–"
}

func rebuildTable(r *report.Rebuild) *report.Table {
	b := r.Bounds
	if b == nil {
		b = &report.RebuildBounds{From: "not stated"}
	}
	resTip := "‖W_base + s·B·A − W_tuned‖_F over the bf16 rounding noise of the tuned weight, √(Σ ulp(w)²/12)"
	if b.ResidualToNoiseMax > 0 {
		resTip += fmt.Sprintf("; above %g fails", b.ResidualToNoiseMax)
	}
	if b.ResidualToNoiseMin > 0 {
		resTip += fmt.Sprintf("; below %g, for a large matrix, is better than claimed (info)", b.ResidualToNoiseMin)
	}
	relTip := "‖W_base + s·B·A − W_tuned‖_F / ‖W_tuned‖_F"
	if b.RebuiltRelErrorMax > 0 {
		relTip += fmt.Sprintf("; above %g%% fails", 100*b.RebuiltRelErrorMax)
	} else {
		relTip += "; not bounded without a claims profile"
	}
	bound := func(x float64, pct bool) string {
		switch {
		case x <= 0:
			return "not bounded"
		case pct:
			return fmt.Sprintf("≤ %g%%", 100*x)
		}
		return fmt.Sprintf("≤ %g", x)
	}
	t := &report.Table{ID: "rebuild-modules", Name: "clefcheck-rebuild", Group: "module",
		Note: fmt.Sprintf("Bounds (%s): residual/noise %s; rebuilt relative error %s.", b.From, bound(b.ResidualToNoiseMax, false), bound(b.RebuiltRelErrorMax, true)),
		Cols: []report.Column{
			{Name: "status", Tip: "the worst finding about this module: ✗ fail, i info, ✓ ok", Num: true},
			{Name: "module", Tip: "the module rebuilt, under its layer (the CSV has its full path)"},
			{Name: "layer", Tip: "the decoder layer", Num: true},
			{Name: "out × in", Tip: "the weight's shape; sorts by out·in", Num: true},
			{Name: "rows read", Tip: "rows of the weight read from both checkpoints: all of them, or those a sampled rebuild drew (its figures are then estimates with their interval)", Num: true},
			{Name: "residual / noise", Tip: resTip + "; a sampled module's interval in brackets", Num: true},
			{Name: "rebuilt rel. error", Tip: relTip + "; a sampled module's interval in brackets", Num: true},
		}}
	w := worstOf(r.Findings)
	for i, m := range r.Matrices {
		st, cls, failing := statusOf(w, m.Module)
		l := layerOf(m.Module)
		read := report.NumCell(1, "all")
		if m.Units > 0 && m.Rows < m.Units {
			read = report.NumCell(float64(m.Rows)/float64(m.Units), fmt.Sprintf("%d of %d", m.Rows, m.Units))
		}
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{st, moduleCell(m.Module), layerCell(l), shapeCell(m.Out, m.In), read,
			report.NumCell(m.ResidualToNoise, withInterval("%.4f", 1, m.ResidualToNoise, m.ResidualToNoiseCI)),
			report.NumCell(m.RebuiltRelError, withInterval("%.4g%%", 100, m.RebuiltRelError, m.RebuiltRelErrorCI))},
			Class: cls, Failing: failing, Layer: l, Module: peft.ShortModule(m.Module), Ref: i})
	}
	return t
}

// withInterval writes an estimate, scaled, with its interval when it has
// one, as the CLI does: "0.8537 (0.6669–1.0927)".
func withInterval(format string, scale, v float64, ci *[2]float64) string {
	s := fmt.Sprintf(format, scale*v)
	if ci != nil && ci[0] != ci[1] {
		s += " (" + fmt.Sprintf(format, scale*ci[0]) + "–" + fmt.Sprintf(format, scale*ci[1]) + ")"
	}
	return s
}

// layerOf is the number after "layers." in a module's name (−1: none).
func layerOf(module string) int {
	parts := strings.Split(module, ".")
	for i := 0; i+1 < len(parts); i++ {
		var n int
		if _, err := fmt.Sscanf(parts[i+1], "%d", &n); parts[i] == "layers" && err == nil {
			return n
		}
	}
	return -1
}

func hiddenTable(h *report.Hidden) *report.Table {
	tol := h.Summary.Tol
	t := &report.Table{ID: "hidden-records", Name: "clefcheck-hidden", Group: "dataset", Cols: []report.Column{
		{Name: "record", Tip: "the test record's id (dataset/name)"},
		{Name: "status", Tip: "✓ ok; ✗ drift (beyond tolerance), missing, tokens (token ids differ), shape or unreadable", Num: true},
		{Name: "worst layer", Tip: "the captured layer with the lowest cosine", Num: true},
		{Name: "cosine", Tip: fmt.Sprintf("cosine similarity of the two states at the worst layer; tolerance ≥ %g", tol.MinCosine), Num: true},
		{Name: "rel. L2", Tip: fmt.Sprintf("‖candidate − reference‖ / ‖reference‖ at the worst layer; tolerance ≤ %g", tol.MaxRelL2), Num: true},
		{Name: "NMSE", Tip: "the mean squared difference over the reference's mean square, at the worst layer", Num: true},
		{Name: "detail", Tip: "what went wrong, when something did"},
	}}
	for i, r := range h.Records {
		st, cls := report.StatusCell("ok"), ""
		if r.Status != "ok" {
			st, cls = report.StatusCell("fail"), "bad"
			st.T = "✗ " + r.Status
			s := r.Status
			st.CSV = &s
		}
		layer, cos, rel, nmse, l := none, none, none, none, -1
		if w := r.Worst; w != nil {
			l, layer, cos, rel, nmse = w.Layer, layerCell(w.Layer), num(w.Cosine, "%.6f"), num(w.RelL2, "%.4g"), num(w.NMSE, "%.3g")
		}
		ds, _, _ := strings.Cut(r.ID, "/")
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{report.TextCell(report.Clip(r.ID, 60)), st, layer, cos, rel, nmse, report.TextCell(report.Clip(r.Detail, 200))},
			Class: cls, Failing: cls != "", Layer: l, Module: ds, Ref: i})
	}
	return t
}

func hiddenLayers(h *report.Hidden) *report.Table {
	tol := h.Summary.Tol
	t := &report.Table{ID: "hidden-layers", Name: "clefcheck-hidden-layers", Cols: []report.Column{
		{Name: "layer", Tip: "a captured layer", Num: true},
		{Name: "status", Tip: "✓ every record within tolerance at this layer, ✗ one or more beyond it", Num: true},
		{Name: "worst cosine", Tip: fmt.Sprintf("the lowest cosine similarity over the records; tolerance ≥ %g", tol.MinCosine), Num: true},
		{Name: "worst rel. L2", Tip: fmt.Sprintf("the largest ‖candidate − reference‖ / ‖reference‖ over the records; tolerance ≤ %g", tol.MaxRelL2), Num: true},
		{Name: "worst NMSE", Tip: "the largest normalised mean squared error over the records", Num: true},
		{Name: "max |Δ|", Tip: "the largest absolute difference of one value", Num: true},
	}}
	for i, l := range h.Summary.ByLayer {
		st, cls := report.StatusCell("ok"), ""
		if !l.OK {
			st, cls = report.StatusCell("fail"), "bad"
		}
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{layerCell(l.Layer), st, num(l.Cosine, "%.6f"), num(l.RelL2, "%.4g"), num(l.NMSE, "%.3g"), num(l.MaxAbs, "%.3g")},
			Class: cls, Failing: !l.OK, Layer: -1, Ref: i})
	}
	return t
}

func decisionsTable(rs []report.DecisionRow) *report.Table {
	t := &report.Table{ID: "decisions", Name: "clefcheck-decisions", Group: "dataset", Cols: []report.Column{
		{Name: "record", Tip: "the test record's id (dataset/name)"},
		{Name: "status", Tip: "✓ agrees with the reference, ✗ differs, ? no answer (not checked)", Num: true},
		{Name: "server", Tip: "the server's choice"},
		{Name: "reference", Tip: "the reference's choice, at full precision"},
		{Name: "known", Tip: "the record's known answer, when it has one"},
		{Name: "ms", Tip: "the decision's latency, request to answer, in milliseconds", Num: true},
		{Name: "error", Tip: "why the request got no answer"},
	}}
	for i, r := range rs {
		st, cls, ms := report.StatusCell("ok"), "", num(r.LatencyMS, "%.1f")
		switch {
		case r.Status == report.Failed:
			st, cls, ms = report.StatusCell("error"), "unchecked", none
			st.T = "? no answer"
		case r.Reference != "" && r.Choice != r.Reference:
			st, cls = report.StatusCell("fail"), "bad"
			st.T = "✗ differs"
		case r.Reference != "":
			st.T = "✓ agrees"
		}
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{report.TextCell(report.Clip(r.ID, 60)), st, report.TextCell(report.Clip(r.Choice, 40)),
			report.TextCell(report.Clip(r.Reference, 40)), report.TextCell(report.Clip(r.Known, 40)), ms, report.TextCell(report.Clip(r.Error, 200))},
			Class: cls, Failing: cls != "", Layer: -1, Module: r.Dataset, Ref: i})
	}
	return t
}

func codesTable(ds []report.CodeDoc) *report.Table {
	t := &report.Table{ID: "codes", Name: "clefcheck-codes", Cols: []report.Column{
		{Name: "code", Tip: "the stable code findings carry (tools and CI match on it)"},
		{Name: "severity", Tip: "the severities it is given: fail (the artifact is wrong), warn, info, error (could not be checked)"},
		{Name: "when", Tip: "what it means"},
		{Name: "what to do", Tip: "what to look at or fix"},
		{Name: "defined in", Tip: "FORMATS §6 (the shared contract) or wasm/FORMATS.md (this project's extension)"},
	}}
	for i, d := range ds {
		t.Rows = append(t.Rows, report.Row{Cells: []report.Cell{report.TextCell(string(d.Code)), report.TextCell(d.Severity), report.TextCell(d.When),
			report.TextCell(d.Fix), report.TextCell(d.Source)}, Layer: -1, Ref: i})
	}
	return t
}

// provenanceTables are what was audited, with what and when (field and
// value), and the files read with their digests.
func provenanceTables(pv *report.Provenance) []*report.Table {
	if pv == nil {
		return nil
	}
	s := pv.Source
	var src string
	switch s.Kind {
	case "hub":
		src = fmt.Sprintf("%s at %s → commit %s", s.Repo, report.OrNone(s.Revision), s.Commit)
		if s.Path != "" {
			src += ", folder " + s.Path
		}
		if s.Endpoint != "" {
			src += " (" + s.Endpoint + ")"
		}
	case "url":
		src = s.URL
	default:
		src = strings.TrimSpace(s.Kind + " " + s.Local)
	}
	tl := pv.Tool
	tool := tl.Name + " " + tl.Version
	if tl.Revision != "" {
		tool += " (revision " + tl.Revision + ")"
	}
	kv := []string{"source", src, "tool", tool}
	if tl.Engine != "" {
		kv = append(kv, "engine", tl.Engine)
	}
	if c := pv.Claims; c != nil {
		kv = append(kv, "claims", c.Name+", SHA-256 "+c.SHA256)
	}
	kv = append(kv, "mode", string(pv.Mode), "started", pv.Started.Format("2006-01-02 15:04:05 MST"), "took", fmt.Sprintf("%.2f s", pv.Seconds))
	if pv.Seed != "" {
		kv = append(kv, "seed", pv.Seed)
	}
	d := pv.Digests
	if d.Computed {
		kv = append(kv, "digests", fmt.Sprintf("%s bytes hashed (%s read again) in %.2f s", report.Count(d.Bytes), report.Count(d.Reread), d.Seconds))
	} else {
		kv = append(kv, "digests", "not computed ("+report.OrNone(d.Why)+")")
	}
	info := &report.Table{ID: "provenance-info", Name: "clefcheck-provenance", Cols: []report.Column{{Name: "what"}, {Name: "value"}}}
	for i := 0; i+1 < len(kv); i += 2 {
		info.Rows = append(info.Rows, report.Row{Cells: []report.Cell{report.TextCell(kv[i]), report.TextCell(report.Clip(kv[i+1], 300))}, Layer: -1})
	}
	files := &report.Table{ID: "provenance-files", Name: "clefcheck-files", Cols: []report.Column{
		{Name: "file", Tip: "a file the audit read"},
		{Name: "bytes", Tip: "its size", Num: true},
		{Name: "SHA-256", Tip: "computed as its bytes passed"},
		{Name: "listed by the host", Tip: "✓ matches the SHA-256 the host lists (the Hub's LFS oid), ✗ differs (file.digest), – not listed"},
	}}
	for i, f := range pv.Files {
		listed, cls := "– not listed", ""
		switch {
		case f.Listed == "":
		case f.Listed == f.SHA256:
			listed = "✓ matches"
		default:
			listed, cls = "✗ differs: "+f.Listed, "bad"
		}
		files.Rows = append(files.Rows, report.Row{Cells: []report.Cell{report.TextCell(report.Clip(f.Name, 100)), report.NumCell(float64(f.Size), report.Count(f.Size)),
			report.TextCell(report.OrNone(f.SHA256)), report.TextCell(listed)}, Class: cls, Failing: cls != "", Layer: -1, Ref: i})
	}
	return []*report.Table{info, files}
}
