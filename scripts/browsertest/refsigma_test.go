//go:build browser

package browsertest

// The pool workers check the pairs against the engine worker's extraction
// report: they read none of their own, and are sent each pair's singular
// values with its deal (audit.Job.Ref, msg.Pairs.Refs).

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// pageAudit is what the browser tests read of an audit's JSON (the page's
// download: downloadedAudit; the CLI's --json).
type pageAudit struct {
	Verdict string `json:"verdict"`
	Summary struct {
		Report string `json:"report"`
		Kernel string `json:"kernel"`
	} `json:"summary"`
	Matrices []struct {
		Module     string    `json:"module"`
		Sigma      []float64 `json:"sigma"`
		SigmaBound *float64  `json:"sigma_bound"`
		ReportSV   *float64  `json:"report_sv"`
	} `json:"matrices"`
	Findings []struct {
		Code     string `json:"code"`
		Severity string `json:"severity"`
		Message  string `json:"message"`
	} `json:"findings"`
	Provenance struct {
		Files []struct {
			Name   string `json:"name"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	} `json:"provenance"`
}

// TestBrowserPoolTakesTheReport: in a copy of the demo adapter, the
// report's σ₁ of three pairs is moved to where the diagonal shortcut's
// bound (sigma_bound) no longer decides the comparison with it (σ₁ within
// the tolerance, but the bound's upper end outside): the CLI sends those
// pairs to the eigensolver. So must the page's exact audit, whose pairs
// are checked in pool workers that hold no report of their own — they
// know these σ only from the engine worker. Without them they would take
// the shortcut, and the page's figures would differ from the CLI's.
func TestBrowserPoolTakesTheReport(t *testing.T) {
	e := harness(t)
	dir := t.TempDir()
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors", "extraction-report.json"} {
		data, err := os.ReadFile(filepath.Join(e.world, "adapter", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := e.clefcheck(t, "audit", "--json", "--exact", "--claims", "demo", "--no-progress", dir)
	var genuine pageAudit
	jsonOf(t, out, &genuine)
	var tol struct {
		Summary struct {
			Tolerances struct {
				SigmaRel float64 `json:"sigma_rel"`
				SigmaAbs float64 `json:"sigma_abs"`
			} `json:"tolerances"`
		} `json:"summary"`
	}
	jsonOf(t, out, &tol)
	rel, abs := tol.Summary.Tolerances.SigmaRel, tol.Summary.Tolerances.SigmaAbs
	if rel <= 0 || abs <= 0 {
		t.Fatalf("tolerances %+v", tol.Summary.Tolerances)
	}
	// ref₁ with σ₁ − ref₁ = allowed − b·σ₁/2 (allowed = (rel + abs)·ref₁):
	// σ₁ passes (by about b/(2·rel) of the tolerance: ~9% for the demo's b),
	// but σ₁·(1 + b) would not.
	moved := map[string]float64{}
	for _, m := range genuine.Matrices {
		if len(moved) < 3 && m.SigmaBound != nil && *m.SigmaBound > 0 && len(m.Sigma) > 0 && m.Sigma[0] > 0 {
			moved[m.Module] = m.Sigma[0] * (1 + *m.SigmaBound/2) / (1 + rel + abs)
		}
	}
	if len(moved) < 3 {
		t.Fatalf("only %d pairs took the shortcut", len(moved))
	}
	rp := filepath.Join(dir, "extraction-report.json")
	var rep map[string]any
	data, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	jsonOf(t, data, &rep)
	n := 0
	for _, x := range rep["matrices"].([]any) {
		x := x.(map[string]any)
		if v, ok := moved[x["module"].(string)]; ok {
			x["singular_values"].([]any)[0] = v
			n++
		}
	}
	if n != len(moved) {
		t.Fatalf("moved %d of the report's σ₁, want %d", n, len(moved))
	}
	if data, err = json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var cli pageAudit
	jsonOf(t, e.clefcheck(t, "audit", "--json", "--exact", "--claims", "demo", "--no-progress", dir), &cli)
	for _, m := range cli.Matrices {
		if _, ok := moved[m.Module]; ok && m.SigmaBound != nil {
			t.Fatalf("the CLI took the shortcut for %s with the moved σ₁: the test's premise fails", m.Module)
		}
	}

	var mu sync.Mutex
	gets := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossOrigin(w, r) {
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/adapter/")
		if strings.ContainsAny(name, "/\\") || name == "" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		gets[name]++
		mu.Unlock()
		w.Header().Set("Cache-Control", "no-store")
		http.ServeFile(w, r, filepath.Join(dir, name))
	}))
	defer srv.Close()

	p := newTab(t, 3*time.Minute)
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.do("choosing the claims, mode and URL", chromedp.SetValue("#claims", "demo"), chromedp.SetValue("#mode", "exact"),
		chromedp.SetValue("#adapter-url", srv.URL+"/adapter/"))
	p.run(`["#claims","#mode","#adapter-url"].forEach(s => document.querySelector(s).dispatchEvent(new Event("change")))`)
	p.click("#open-url")
	if _, err := p.waitText("#verdict", strings.ToUpper(cli.Verdict), 2*time.Minute); err != nil {
		p.shot("pool-report")
		t.Fatalf("the page's verdict, the CLI's %s: %v (%s)", cli.Verdict, err, clip(p.text("main"), 300))
	}
	if err := p.waitJS("the download button", `!!document.querySelector("#download-json")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var page pageAudit
	jsonOf(t, pageReport(t, p), &page)
	if !strings.Contains(page.Summary.Kernel, "Web Worker") {
		t.Fatalf("the pairs were not checked in pool workers: %q", page.Summary.Kernel)
	}
	if page.Summary.Report == "" {
		t.Fatal("the page's audit used no extraction report")
	}
	byModule := map[string]int{}
	for i, m := range cli.Matrices {
		byModule[m.Module] = i
	}
	if len(page.Matrices) != len(cli.Matrices) {
		t.Fatalf("%d pairs on the page, %d in the CLI's audit", len(page.Matrices), len(cli.Matrices))
	}
	shortcut := 0
	for _, m := range page.Matrices {
		c := cli.Matrices[byModule[m.Module]]
		if (m.SigmaBound == nil) != (c.SigmaBound == nil) {
			_, mv := moved[m.Module]
			t.Errorf("%s (σ₁ moved in the report: %v): sigma_bound %v on the page, %v in the CLI", m.Module, mv, ptr(m.SigmaBound), ptr(c.SigmaBound))
		}
		if m.SigmaBound != nil {
			shortcut++
		}
		if len(m.Sigma) != len(c.Sigma) || len(m.Sigma) > 0 && math.Abs(m.Sigma[0]-c.Sigma[0]) > 1e-4*c.Sigma[0] {
			t.Errorf("%s: σ %v on the page, %v in the CLI", m.Module, head(m.Sigma), head(c.Sigma))
		}
		if _, mv := moved[m.Module]; mv && (m.ReportSV == nil || *m.ReportSV >= 1 || *m.ReportSV < 0.5) {
			t.Errorf("%s: σ₁ against the moved report %v tolerances, want about 0.9", m.Module, ptr(m.ReportSV))
		}
	}
	mu.Lock()
	t.Logf("page: %s, %d pairs by the shortcut (the CLI %d of %d); requests for the report: %d", page.Verdict, shortcut, countBound(cli), len(cli.Matrices), gets["extraction-report.json"])
	mu.Unlock()
}

func ptr(p *float64) any {
	if p == nil {
		return "none"
	}
	return *p
}

func head(s []float64) []float64 { return s[:min(2, len(s))] }

func countBound(a pageAudit) (n int) {
	for _, m := range a.Matrices {
		if m.SigmaBound != nil {
			n++
		}
	}
	return n
}
