package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/demo"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/world"
)

var worldDir string

func TestMain(m *testing.M) { os.Exit(demo.Main(m.Run, "clefcheck-cli-", &worldDir)) }

// cli runs the command in-process as main would, returning the exit code
// and what it printed.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	commands["audit"] = func() Command { return &AuditCommand{stdout: &out, stderr: &errb} }
	commands["world"] = func() Command { return &WorldCommand{stdout: &out, stderr: &errb} }
	commands["rebuild"] = func() Command { return &RebuildCommand{stdout: &out, stderr: &errb} }
	commands["claims"] = func() Command { return &ClaimsCommand{stdout: &out} }
	commands["decide"] = func() Command { return &DecideCommand{stdout: &out, stderr: &errb} }
	commands["hidden"] = func() Command { return &HiddenCommand{stdout: &out, stderr: &errb} }
	commands["answers"] = func() Command { return &AnswersCommand{stdout: &out, stderr: &errb} }
	commands["badge"] = func() Command { return &BadgeCommand{stdout: &out} }
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	ad := filepath.Join(dir, "adapter")

	code, out, _ := cli(t, "audit", "--claims", "demo", ad)
	if code != 0 || !strings.Contains(out, "verdict: PASS") {
		t.Fatalf("audit: %d\n%s", code, out)
	}
	code, out, _ = cli(t, "audit", "--json", "--claims", "demo", "--base", filepath.Join(dir, "base"), "--tuned", filepath.Join(dir, "tuned"), ad)
	var res struct {
		Verdict  string `json:"verdict"`
		Findings []struct {
			Code, Severity, Subject, Message string
		} `json:"findings"`
		Summary  map[string]any   `json:"summary"`
		Matrices []map[string]any `json:"matrices"`
		Rebuild  *struct {
			Matrices []map[string]any `json:"matrices"`
		} `json:"rebuild"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if code != 0 || res.Verdict != "pass" || len(res.Matrices) != 186 || res.Summary["pairs"] != 186.0 || res.Rebuild == nil || len(res.Rebuild.Matrices) != 186 {
		t.Fatalf("json audit: code %d verdict %s, %d matrices, summary %v", code, res.Verdict, len(res.Matrices), res.Summary)
	}

	// A failing audit exits 1.
	os.WriteFile(filepath.Join(ad, "adapter_config.json"), []byte(`{"r":16,"lora_alpha":16,"use_dora":true}`), 0o644)
	if code, out, _ := cli(t, "audit", ad); code != 1 || !strings.Contains(out, "config.invalid") {
		t.Errorf("failing audit: %d\n%s", code, out)
	}
	// Could not run: exit 2 with a hint.
	// A folder that is not there: verdict error (exit 2), with one JSON
	// object that says so.
	code, out, _ = cli(t, "audit", "--json", filepath.Join(dir, "nope"))
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 2 || res.Verdict != "error" || len(res.Findings) != 1 || res.Findings[0].Code != "input.missing" || res.Findings[0].Severity != "error" {
		t.Errorf("missing folder: exit %d, %v: %s", code, err, out)
	}
	if code, out, _ := cli(t, "audit", filepath.Join(dir, "nope")); code != 2 || !strings.Contains(out, "verdict: ERROR") || !strings.Contains(out, "input.missing") || strings.Contains(out, "0 pairs") {
		t.Errorf("missing folder, text: exit %d\n%s", code, out)
	}
	// A usage error with --json still prints one JSON object.
	if code, out, _ := cli(t, "audit", "--json", "--bogus", ad); code != 2 || !strings.Contains(out, `"verdict": "error"`) || !strings.Contains(out, "check.invalid") {
		t.Errorf("usage error with --json: exit %d: %s", code, out)
	}
	for _, args := range [][]string{
		{"audit"},
		{"audit", "--bogus", ad},
		{"audit", "--claims", "nosuch", ad},
		{"audit", "--base", "x", ad},
		{"audit", "--quick", "--randomized", ad},
		{"audit", "--mode", "exact", "--quick", ad},
		{"audit", "--mode", "deep", ad},
		{"frobnicate"},
	} {
		if code, _, errs := cli(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	// One spelling of the mode, in the flag and in the summary.
	for _, args := range [][]string{{"--quick"}, {"--mode", "quick"}, {"--mode", "randomized", "--randomized"}, {}} {
		want := "exact"
		if len(args) > 0 {
			want = strings.TrimPrefix(args[len(args)-1], "--")
		}
		code, out, _ := cli(t, append(append([]string{"audit", "--json"}, args...), filepath.Join(dir, "adapter"))...)
		var r struct{ Summary struct{ Mode string } }
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Summary.Mode != want {
			t.Errorf("audit %v: exit %d, mode %q, want %q (%v)", args, code, r.Summary.Mode, want, err)
		}
	}
	if code, out, _ := cli(t, "claims"); code != 0 || !strings.Contains(out, "clef-lora-r256") || !strings.Contains(out, "700,366,848 parameters") {
		t.Errorf("claims: %d %s", code, out)
	}
	if code, out, _ := cli(t, "audit", "-h"); code != 0 || !strings.Contains(out, "Usage: clefcheck audit") {
		t.Errorf("help: %d %s", code, out)
	}
}

type decideJSON struct {
	Verdict  string `json:"verdict"`
	Findings []struct {
		Code, Severity, Subject, Message string
	} `json:"findings"`
	Summary struct {
		Records, Answered, Failed int
		Agree                     *int `json:"agree"`
		Latency                   struct {
			P50 float64 `json:"p50_ms"`
			P90 float64 `json:"p90_ms"`
		} `json:"latency"`
		Hidden *struct {
			Compared, Failed int
			MinCosine        float64 `json:"min_cosine"`
			ByLayer          []struct {
				Layer int
				OK    bool
			} `json:"by_layer"`
		} `json:"hidden"`
	} `json:"summary"`
}

// serve runs the demo decision service as decisiond would, on loopback.
func serve(t *testing.T, quant, drop string) string {
	t.Helper()
	srv, _, err := newDecisionServer(worldDir, quant, drop, false)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return hs.URL
}

func runDecide(t *testing.T, server, out string) (int, decideJSON) {
	t.Helper()
	code, stdout, errs := cli(t, "decide", "--json", "--no-progress", "--hidden", "--concurrency", "2", "--server", server,
		"--records", filepath.Join(worldDir, "records", "arc-mini.jsonl"), "--records", filepath.Join(worldDir, "records", "intents-mini.jsonl"),
		"--reference", filepath.Join(worldDir, "reference"), "--out", out)
	var res decideJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("decide: exit %d, not JSON: %v\n%s\n%s", code, err, stdout, errs)
	}
	return code, res
}

// TestDecisionsEndToEnd: at full precision the server reproduces the
// reference answers exactly and the hidden states within tolerance; with
// NVFP4 the hidden check reports a drift and the agreement is counted; with
// the LoRA dropped on in_proj_a/b the hidden check fails on the later layers.
func TestDecisionsEndToEnd(t *testing.T) {
	out := t.TempDir()
	code, res := runDecide(t, serve(t, "", ""), filepath.Join(out, "full"))
	if code != 0 || res.Verdict != "pass" || res.Summary.Answered != 36 || *res.Summary.Agree != 36 || res.Summary.Hidden.Failed != 0 || res.Summary.Latency.P50 <= 0 {
		t.Fatalf("full precision: exit %d %+v %v", code, res.Summary, res.Findings)
	}
	// The written capture passes the standalone checks too.
	if code, stdout, _ := cli(t, "hidden", filepath.Join(worldDir, "reference", "hidden"), filepath.Join(out, "full", "hidden")); code != 0 || !strings.Contains(stdout, "verdict: PASS") {
		t.Errorf("hidden: %d\n%s", code, stdout)
	}
	if code, stdout, _ := cli(t, "answers", "--records", filepath.Join(worldDir, "records", "arc-mini.jsonl"), filepath.Join(worldDir, "reference", "answers"), filepath.Join(out, "full", "answers")); code != 0 || !strings.Contains(stdout, "18 of 36") && !strings.Contains(stdout, "36 of 36") {
		t.Errorf("answers: %d\n%s", code, stdout)
	}

	code, res = runDecide(t, serve(t, "nvfp4", ""), filepath.Join(out, "nvfp4"))
	if code != 1 || res.Summary.Agree == nil || res.Summary.Hidden == nil || res.Summary.Hidden.Failed == 0 || res.Summary.Hidden.MinCosine > 0.999 || res.Summary.Hidden.MinCosine < 0.9 {
		t.Fatalf("nvfp4: exit %d %+v", code, res.Summary)
	}
	t.Logf("nvfp4: %d of 36 agree, worst cosine %.4f, p50 %.1f ms", *res.Summary.Agree, res.Summary.Hidden.MinCosine, res.Summary.Latency.P50)

	code, res = runDecide(t, serve(t, "", "in_proj_a,in_proj_b"), filepath.Join(out, "drop"))
	if code != 1 || res.Summary.Hidden.Failed == 0 {
		t.Fatalf("dropped modules: exit %d %+v", code, res.Summary)
	}
	bad := 0
	for _, l := range res.Summary.Hidden.ByLayer {
		if !l.OK {
			bad++
		}
	}
	last := res.Summary.Hidden.ByLayer[len(res.Summary.Hidden.ByLayer)-1]
	if bad == 0 || last.OK || last.Layer != 63 {
		t.Errorf("dropped modules: %d layers beyond tolerance, last %+v", bad, last)
	}
	found := false
	for _, f := range res.Findings {
		found = found || (f.Code == "hidden.mismatch" && strings.Contains(f.Message, "63 (cos"))
	}
	if !found {
		t.Errorf("no hidden.mismatch naming layer 63: %v", res.Findings)
	}
}

// TestProxy: the page's origin reaches a server without CORS through the proxy.
func TestProxy(t *testing.T) {
	up := serve(t, "", "")
	u, _ := url.Parse(up)
	ps := httptest.NewServer(newProxy(u, []string{"https://example.org"}, proxyTimeouts{}))
	defer ps.Close()
	req, _ := http.NewRequest("OPTIONS", ps.URL+decision.Path, nil)
	req.Header.Set("Origin", "https://example.org")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "https://example.org" {
		t.Fatalf("preflight through the proxy: %d %v", resp.StatusCode, resp.Header)
	}
	c := &decision.Client{BaseURL: ps.URL}
	r, err := c.Decide(context.Background(), &decision.Request{ID: "p", Prompt: "hi", Options: []string{"A", "B"}})
	if err != nil || r.ID != "p" {
		t.Fatalf("decision through the proxy: %v", err)
	}
	// A dead upstream is a JSON 502.
	dead, _ := url.Parse("http://127.0.0.1:1")
	ds := httptest.NewServer(newProxy(dead, []string{"*"}, proxyTimeouts{}))
	defer ds.Close()
	_, err = (&decision.Client{BaseURL: ds.URL, Retries: -1}).Decide(context.Background(), &decision.Request{ID: "p", Prompt: "hi", Options: []string{"A", "B"}})
	if err == nil || !strings.Contains(err.Error(), "502") || !strings.Contains(err.Error(), "proxy_error") {
		t.Errorf("dead upstream: %v", err)
	}
}

// TestDecideFailures: a server that fails makes every record a
// decision.failed finding, never an answer, and the exit status 1.
func TestDecideFailures(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		w.Write([]byte(`{"error":{"message":"model not loaded","type":"server_error"}}`))
	}))
	defer hs.Close()
	code, stdout, errs := cli(t, "decide", "--json", "--no-progress", "--server", hs.URL,
		"--records", filepath.Join(worldDir, "records", "arc-mini.jsonl"), "--reference", filepath.Join(worldDir, "reference"))
	var res decideJSON
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s\n%s", err, stdout, errs)
	}
	failed := 0
	for _, f := range res.Findings {
		if f.Code == "decision.failed" && f.Severity == "error" && strings.Contains(f.Message, "model not loaded") {
			failed++
		}
	}
	// The server is unusable, not wrong: nothing was checked (exit 2).
	if code != 2 || res.Verdict != "error" || res.Summary.Answered != 0 || res.Summary.Failed != 18 || failed != 18 || *res.Summary.Agree != 0 {
		t.Errorf("exit %d, summary %+v, %d decision.failed", code, res.Summary, failed)
	}
}

// TestPrintFindingsAlike: findings that could not be checked for one cause
// (each at its own pair and bytes) print as one line with their count.
func TestPrintFindingsAlike(t *testing.T) {
	var fs []report.Finding
	for i := range 30 {
		subj := fmt.Sprintf("layers.%d.mlp.up_proj.lora_A.weight", 40+i)
		fs = append(fs, report.Could(report.InputChanged, subj, "%s: reading bytes %d-%d of a.safetensors: the server's ETag went from \"1\" to \"2\"", subj, i*10, i*10+9))
	}
	fs = append(fs, report.Finding{Code: report.RankDeficient, Severity: report.Info, Subject: "adapter", Message: "6 matrices"},
		report.Could(report.InputUnreachable, "adapter_config.json", "unreachable"))
	var b strings.Builder
	printFindings(&b, fs)
	out := b.String()
	if n := strings.Count(out, "input.changed"); n != 1 || !strings.Contains(out, "layers.40.mlp.up_proj.lora_A.weight (and 29 more alike): layers.40.mlp.up_proj.lora_A.weight: reading bytes 0-9") {
		t.Errorf("%d input.changed lines:\n%s", n, out)
	}
	for _, want := range []string{"32 findings: 31 could not be checked, 1 info", "rank.deficient", "input.unreachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}
