package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cli runs the command in-process as main would, returning the exit code
// and what it printed.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	commands["audit"] = func() Command { return &AuditCommand{stdout: &out, stderr: &errb} }
	commands["world"] = func() Command { return &WorldCommand{stdout: &out, stderr: &errb} }
	commands["rebuild"] = func() Command { return &RebuildCommand{stdout: &out, stderr: &errb} }
	commands["claims"] = func() Command { return &ClaimsCommand{stdout: &out} }
	code := run(context.Background(), args, &errb)
	return code, out.String(), errb.String()
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	if code, out, errs := cli(t, "world", dir); code != 0 || !strings.Contains(out, "wrote the demo world") {
		t.Fatalf("world: %d %s %s", code, out, errs)
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
	for _, args := range [][]string{
		{"audit"},
		{"audit", filepath.Join(dir, "nope")},
		{"audit", "--bogus", ad},
		{"audit", "--claims", "nosuch", ad},
		{"audit", "--base", "x", ad},
		{"frobnicate"},
	} {
		if code, _, errs := cli(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if code, out, _ := cli(t, "claims"); code != 0 || !strings.Contains(out, "clef-lora-r256") || !strings.Contains(out, "700366848") {
		t.Errorf("claims: %d %s", code, out)
	}
	if code, _, errs := cli(t, "audit", "-h"); code != 0 || !strings.Contains(errs, "Usage: clefcheck audit") {
		t.Errorf("help: %d %s", code, errs)
	}
}
