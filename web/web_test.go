package web

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/chart"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

func sampleResult() *audit.Result {
	dev := 0.001
	var ms []*audit.Matrix
	for i := 0; i < 30; i++ {
		ms = append(ms, &audit.Matrix{Module: "model.language_model.layers.40.mlp.gate_proj", Out: 192, In: 64, Rank: 16, NumRank: 16, Sigma: []float64{2, 1, 0.5}, FormDev: &dev, Method: "gram"})
	}
	return &audit.Result{Outcome: report.Outcome{
		Verdict: "fail",
		Findings: []report.Finding{
			{Code: report.PairMissing, Severity: report.Fail, Subject: "model.layers.41.mlp.up_proj", Message: "has lora_A but no lora_B"},
			{Code: report.FactorForm, Severity: report.Warn, Subject: "x", Message: "<script>alert(1)</script>"},
			{Code: report.RankDeficient, Severity: report.Info, Subject: "adapter_model", Message: "36 matrices"},
		}},
		Summary:  audit.Summary{Adapter: "demo", Pairs: 30, Mode: report.ModeExact},
		Matrices: ms,
	}
}

// TestAuditPageRendersResult mounts the page in go-app's test engine, then
// renders it for a result: verdict badge, findings filtered by severity, a
// paginated table.
func TestAuditPageRendersResult(t *testing.T) {
	p := &AuditPage{}
	e := app.NewTestEngine()
	e.Load(p)
	e.ConsumeAll()
	p.Res, p.Status = sampleResult(), "done"
	tables := engineTables(p.Res, report.View{})
	e.ConsumeAll()
	html := app.HTMLString(p.Render())
	for _, want := range []string{`id="verdict"`, ">FAIL<", "pair.missing", "factor.form", "page 1 of 2", "Download Markdown"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Text from a file is shown as text, never as HTML.
	if strings.Contains(html, "<script>alert(1)</script>") {
		t.Error("a finding's message reached the page unescaped")
	}
	if got := rowsOf(html, "matrices"); got != 26 { // header + 25 rows
		t.Errorf("%d table rows, want 26", got)
	}
	// Every header is a sort button with a tooltip; the legend explains the columns.
	for _, want := range []string{`aria-sort="none"`, `title="SVD-form deviation`, `<span class="k">form dev.</span>`, "tolerance 2⁻⁶", `<span class="k">report σ / tol</span>`, `href="/codes#pair.missing"`, "Download CSV", "✗ fail"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The views the engine answers: warnings only, the second page.
	keepTables(&jobs.Output{Tables: []*report.TablePage{tables["findings"].PageOf(report.View{Module: "warn"}, runner.RowsPerPage), tables["matrices"].PageOf(report.View{Page: 1, Sort: 3, Desc: true}, runner.RowsPerPage)}})
	html = app.HTMLString(p.Render())
	if strings.Contains(html, "pair.missing") || !strings.Contains(html, "factor.form") {
		t.Error("the severity filter does not filter")
	}
	if !strings.Contains(html, "page 2 of 2") || rowsOf(html, "matrices") != 6 || !strings.Contains(html, `aria-sort="descending"`) || !strings.Contains(html, "layer ▼") {
		t.Errorf("second page, sorted by layer: %d rows", rowsOf(html, "matrices"))
	}
}

// engineTables makes the tables the engine makes for an audit, and keeps
// their first pages as the page does when a job answers.
func engineTables(a *report.Audit, v report.View) map[string]*report.Table {
	out := &jobs.Output{Audit: a}
	m := map[string]*report.Table{}
	for _, t := range runner.Tables(out) {
		m[t.ID] = t
		out.Tables = append(out.Tables, t.PageOf(v, runner.RowsPerPage))
	}
	keepTables(out)
	return m
}

// rowsOf counts the rows of the table with the id in html.
func rowsOf(html, id string) int {
	i := strings.Index(html, `<table id="`+id+`"`)
	if i < 0 {
		return 0
	}
	html = html[i:]
	return strings.Count(html[:strings.Index(html, "</table>")], "<tr")
}

func TestSafeHTTPAndClip(t *testing.T) {
	for _, bad := range []string{"javascript:alert(1)", "data:text/html,x", "file:///etc", "//host/x"} {
		if _, err := safeHTTP(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if u, err := safeHTTP(" https://huggingface.co/kvit-s/clef-lora-r256/resolve/main "); err != nil || !strings.HasPrefix(u, "https://") {
		t.Errorf("https URL refused: %v", err)
	}
	if got := clip(strings.Repeat("x", 500), 10); len(got) > 14 {
		t.Errorf("clip: %d bytes", len(got))
	}
}

// fig is a chart as a job's output carries it.
func fig(c *chart.Chart, key string) jobs.Figure {
	return jobs.Figure{ID: c.ID, Key: key, Caption: c.Caption, SVG: c.SVG}
}

// TestCharts: the pages show the figures the engine drew (package chart):
// the latency histogram and the agreement on the Decisions page, the
// heatmap on the Audit page and, for the pair opened, its spectrum (a
// chart job, here run natively).
func TestCharts(t *testing.T) {
	ok := report.Answered
	rows := []report.DecisionRow{{Status: ok, LatencyMS: 10, Dataset: "arc", Choice: "A", Reference: "A"}, {Status: ok, LatencyMS: 20, Dataset: "arc", Choice: "B", Reference: "A"},
		{Status: ok, LatencyMS: 20}, {Status: ok, LatencyMS: 30}, {Status: report.Failed, LatencyMS: 99, Error: "timeout"}}
	d := &DecisionsPage{Status: "done", Rows: rows, Charts: []jobs.Figure{fig(chart.Latency("latency-histogram", rows), ""), fig(chart.Agreement("agreement-chart", rows), "")}}
	html := app.HTMLString(d.Render())
	for _, want := range []string{`id="latency-histogram"`, ">latency (ms)<", "p50 20 ms", "p90 30 ms", "Latency of the 4 answered decisions", `id="agreement-chart"`, "1/2 ✗"} {
		if !strings.Contains(html, want) {
			t.Errorf("decisions lack %q", want)
		}
	}
	p := &AuditPage{Status: "done", Res: sampleResult()}
	for i, m := range p.Res.Matrices[:3] {
		m.Layer, m.Short, m.Module = 40+i, "mlp.gate_proj", fmt.Sprintf("model.language_model.layers.%d.mlp.gate_proj", 40+i)
	}
	p.Charts = []jobs.Figure{fig(chart.PairGrid("pair-grid", p.Res, chart.Sigma1), chart.Sigma1), fig(chart.PairGrid("pair-grid", p.Res, chart.FormDev), chart.FormDev)}
	p.Metric = chart.FormDev
	html = app.HTMLString(p.Render())
	for _, want := range []string{`id="pair-grid"`, `data-pair="model.language_model.layers.41.mlp.gate_proj"`, `id="grid-metric"`, "SVD-form deviation of each of the"} {
		if !strings.Contains(html, want) {
			t.Errorf("audit lacks %q", want)
		}
	}
	if strings.Contains(html, `id="pair-detail"`) {
		t.Error("a pair is open before any click")
	}
	// The chart job a click asks for.
	out, err := runJob(t.Context(), &jobs.Spec{Kind: jobs.KindChart, Chart: &jobs.ChartSpec{Pair: p.Res.Matrices[1]}}, nil)
	if err != nil || len(out.Charts) != 1 {
		t.Fatalf("chart job: %v, %+v", err, out)
	}
	p.Pair, p.PairFig = p.Res.Matrices[1].Module, &out.Charts[0]
	html = app.HTMLString(p.Render())
	for _, want := range []string{`id="pair-detail"`, `id="pair-spectrum"`, ">σᵢ of s·B·A<", "σ2 = 1"} {
		if !strings.Contains(html, want) {
			t.Errorf("the pair opened lacks %q", want)
		}
	}
}

func TestReconstructReports(t *testing.T) {
	b := &rebuild.Block{Module: "m", Out: 8, In: 6, Rows: 2, Cols: 2, Values: []float64{1, -1, 0.5, 0}, RMS: 0.75}
	r := &rebuild.Result{Outcome: report.Outcome{Verdict: "pass"}, Matrices: []*rebuild.Matrix{{Module: "m", Out: 8, In: 6, RebuiltRelError: 0.0123}}}
	p := &ReconstructPage{Source: "the | demo", Block: b, BlockMD: "## Block\n", Rebuild: r, RebuildMD: "## Rebuild\n"}
	if md := p.markdown(); md != "# clefcheck reconstruct: the \\| demo\n\n## Block\n## Rebuild\n" {
		t.Errorf("markdown %q", md)
	}
	p.Rebuild = nil
	if md := p.markdown(); strings.Contains(md, "Rebuild") || !strings.Contains(md, "Block") {
		t.Errorf("block only: %q", md)
	}
	p.Rebuild = r
	var back struct {
		Adapter string
		Block   rebuild.Block
		Rebuild rebuild.Result
	}
	if err := json.Unmarshal(p.reportJSON(), &back); err != nil || back.Adapter != "the | demo" || back.Block.RMS != 0.75 || back.Rebuild.Matrices[0].RebuiltRelError != 0.0123 {
		t.Errorf("JSON report: %v %+v", err, back)
	}
}

// TestErrorVerdictShowsNoFigures: a check that could not be completed
// reads ERROR (a grey badge, class error), says why and how to fix it, and
// shows no figure that was not measured, on every page.
func TestErrorVerdictShowsNoFigures(t *testing.T) {
	missing := report.Outcome{Verdict: report.VerdictError, Findings: []report.Finding{
		report.Could(report.InputMissing, "http://h/nope/", "HTTP 404 for http://h/nope/adapter_config.json — check the path or URL (and the revision): it names nothing")}}
	check := func(what, html string, bad ...string) {
		t.Helper()
		for _, want := range []string{`class="badge error"`, ">ERROR<", `id="could-not"`, "input.missing", "HTTP 404", "How to fix: check the path"} {
			if !strings.Contains(html, want) {
				t.Errorf("%s lacks %q", what, want)
			}
		}
		for _, b := range append(bad, ">FAIL<", "badge fail") {
			if strings.Contains(html, b) {
				t.Errorf("%s shows %q", what, b)
			}
		}
	}
	a := &AuditPage{Status: "done", Res: &report.Audit{Outcome: missing, Summary: report.AuditSummary{Adapter: "http://h/nope/", Files: []string{}, Mode: report.ModeRandomized, Kernel: "probes go"}, Matrices: []*report.AuditMatrix{}}}
	check("audit", app.HTMLString(a.Render()), "0 pairs", "scaling", `id="matrices"`, "expected pairs from", "computed:")

	h := &HiddenPage{Status: "done", Res: &report.Hidden{Outcome: missing, Summary: report.HiddenSummary{Records: 36, Tol: report.DefaultHidden}, Records: []report.RecordStats{}}}
	check("hidden", app.HTMLString(h.Render()), "worst cosine", "0 compared", `id="hidden-records"`)

	var rows []report.DecisionRow
	var fs []report.Finding
	for _, id := range []string{"arc/1", "arc/2", "arc/3"} {
		rows = append(rows, report.DecisionRow{ID: id, Status: report.Failed, Error: "fetch() failed: TypeError: Failed to fetch", CORS: true})
		fs = append(fs, report.Could(report.DecisionFailed, id, "fetch() failed: TypeError: Failed to fetch — the server could not be reached"))
	}
	zero := 0
	d := &DecisionsPage{Status: "done", Server: "http://127.0.0.1:1", Rows: rows, Failed: 3, Silent: true,
		Result: &report.Decisions{Outcome: report.Outcome{Verdict: report.VerdictError, Findings: fs}, Summary: report.DecisionsSummary{Records: 3, Failed: 3, Agree: &zero, Answers: &report.AnswersSummary{Known: 3, RefCorrect: 3}}, Records: rows}}
	html := app.HTMLString(d.Render())
	for _, want := range []string{`id="decisions-verdict"`, `class="badge error"`, ">ERROR<", "decision.failed", "(and 2 more alike)", "none answered", `id="no-answer"`} {
		if !strings.Contains(html, want) {
			t.Errorf("decisions lacks %q", want)
		}
	}
	for _, b := range []string{`id="agreement"`, "p50", "decisions/s", `id="cors-hint"`, "badge fail", "known answers", `id="decisions"`} {
		if strings.Contains(html, b) {
			t.Errorf("decisions shows %q", b)
		}
	}
}

// TestRunningAuditStates: while the checks run, the summary says so (no
// time, no verdict colour), and every badge the pages draw has a colour
// of its own in the stylesheet (white text on no background is invisible).
func TestRunningAuditStates(t *testing.T) {
	res := sampleResult()
	res.Summary.Files, res.Summary.Tensors = []string{"adapter_model.safetensors"}, 60
	p := &AuditPage{Status: "running", Res: res, Partial: true, Lines: res.Summary.Lines(true), Source: "demo"}
	html := app.HTMLString(p.Render())
	for _, want := range []string{`class="badge running"`, "RUNNING — inventory read", "audit running", `id="phases"`, "step 3 of 4: checks"} {
		if !strings.Contains(html, want) {
			t.Errorf("running audit lacks %q", want)
		}
	}
	for _, bad := range []string{"0.00 s", "0 B/0 B", "ETA", "INVENTORY", `id="matrices"`} {
		if strings.Contains(html, bad) {
			t.Errorf("running audit shows %q", bad)
		}
	}
	css, err := os.ReadFile("../public/clefcheck.css")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"pass", "warn", "fail", "error", "running"} {
		if !strings.Contains(string(css), ".badge."+b+" { background:") {
			t.Errorf("the stylesheet gives .badge.%s no background", b)
		}
	}
}

// TestCouldNotGroupsOneCause: a URL that changed mid-audit stops every
// pair's read, each at its own bytes; the card names the cause once, with
// the count of pairs, and a second cause stays apart.
func TestCouldNotGroupsOneCause(t *testing.T) {
	var fs []report.Finding
	for i := range 186 {
		subj := fmt.Sprintf("base_model.model.layers.%d.mlp.down_proj.lora_A.weight", 40+i/8)
		fs = append(fs, report.Could(report.InputChanged, subj, "%s: reading bytes %d–%d of adapter_model.safetensors: http://h/adapter_model.safetensors: the server's ETag went from \"v1\" to \"v2\" between two reads of it — audit a commit URL", subj, 1000*i, 1000*i+999))
	}
	fs = append(fs, report.Could(report.InputUnreachable, "adapter_config.json", "adapter_config.json: unreachable: gave up after 5 attempts — check the connection"))
	html := app.HTMLString(couldNot(fs))
	if n := strings.Count(html, "<li"); n != 2 {
		t.Errorf("%d entries, want 2 (one per cause): %s", n, html)
	}
	for _, want := range []string{"(and 185 more alike)", "input.changed", "input.unreachable", "layers.40.mlp.down_proj", "bytes 0–999", "How to fix: audit a commit URL", "How to fix: check the connection"} {
		if !strings.Contains(html, want) {
			t.Errorf("the card lacks %q", want)
		}
	}
}
