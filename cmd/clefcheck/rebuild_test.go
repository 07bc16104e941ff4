package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/hub/hubtest"
)

type rebuildJSON struct {
	Verdict  string `json:"verdict"`
	Findings []struct {
		Code, Severity, Subject, Message string
	} `json:"findings"`
	Compared  int      `json:"tensors_compared"`
	Differing []string `json:"tensors_differing"`
	Mode      string   `json:"mode"`
	Matrices  []struct {
		Module   string      `json:"module"`
		Rows     int         `json:"rows_sampled"`
		Units    int         `json:"rows_total"`
		Interval *[2]float64 `json:"residual_to_noise_interval"`
	} `json:"matrices"`
	Plan *struct {
		Bytes         int64 `json:"bytes"`
		MaxBytes      int64 `json:"max_bytes"`
		RowsPerModule int   `json:"rows_per_module"`
	} `json:"plan"`
	BytesRead int64 `json:"bytes_read"`
	Sample    *struct {
		Seed          uint64 `json:"seed"`
		RowsPerModule int    `json:"rows_per_module"`
	} `json:"sample"`
	Provenance struct {
		Seed   string `json:"seed"`
		Inputs []struct {
			Role, Kind, Repo, Commit, Revision, Endpoint string
		} `json:"inputs"`
	} `json:"provenance"`
}

// TestRebuildHub: with HF_ENDPOINT at the Hub simulator, `clefcheck
// rebuild --claims demo ADAPTER` without --base/--tuned rebuilds against
// the claims' checkpoints (clefcheck/demo-base and clefcheck/demo-clef at
// world-1), sampled by default (32 rows: they are remote), showing the
// plan on stderr first; --rows and --seed are honoured and repeatable; a
// plan beyond --max-bytes exits 2 with check.invalid and no figures;
// audit --base/--tuned takes the same flags; --rows with --full, or
// rebuild flags without checkpoints, are usage errors.
func TestRebuildHub(t *testing.T) {
	dir := worldDir
	h := hubtest.New()
	defer h.Close()
	commits := map[string]string{}
	for id, sub := range map[string]string{"clefcheck/demo-base": "base", "clefcheck/demo-clef": "tuned"} {
		c, err := h.Add(id, "world-1", filepath.Join(dir, sub), "")
		if err != nil {
			t.Fatal(err)
		}
		commits[id] = c
	}
	t.Setenv("HF_ENDPOINT", h.Endpoint)
	ad := filepath.Join(dir, "adapter")
	rebuild := func(args ...string) (int, rebuildJSON, string) {
		t.Helper()
		code, out, errs := cli(t, append([]string{"rebuild", "--json", "--no-progress", "--claims", "demo"}, args...)...)
		var res rebuildJSON
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("exit %d, not JSON: %v\n%s\n%s", code, err, out, errs)
		}
		return code, res, errs
	}
	// A fresh seed: a module may be left undecided (warn), never failed.
	code, res, errs := rebuild(ad)
	if code != 0 || (res.Verdict != "pass" && res.Verdict != "warn") || res.Mode != "sampled" || res.Sample == nil || res.Sample.RowsPerModule != 32 || res.Plan == nil || res.Plan.MaxBytes != 512<<20 || res.BytesRead != res.Plan.Bytes || len(res.Differing) != 186 || len(res.Matrices) != 186 {
		t.Fatalf("default: exit %d, %s %s, sample %+v, plan %+v, read %d, %d differ: %v", code, res.Verdict, res.Mode, res.Sample, res.Plan, res.BytesRead, len(res.Differing), res.Findings)
	}
	if !strings.HasPrefix(errs, "rebuild plan: 32 rows of each of 186 modules") {
		t.Errorf("stderr: %q", errs)
	}
	for _, in := range res.Provenance.Inputs {
		if (in.Role == "base" || in.Role == "tuned") && (in.Kind != "hub" || in.Commit != commits[in.Repo] || in.Revision != "world-1" || in.Endpoint != h.Endpoint) {
			t.Errorf("input %+v", in)
		}
	}
	_, a, _ := rebuild("--rows", "8", "--seed", "12", ad)
	_, b, _ := rebuild("--rows", "8", "--seed", "12", ad)
	if a.Sample == nil || a.Sample.Seed != 12 || a.Provenance.Seed != "12" || a.Matrices[3].Rows != 8 || *a.Matrices[3].Interval != *b.Matrices[3].Interval {
		t.Errorf("--rows 8 --seed 12: %+v %+v, %+v vs %+v", a.Sample, a.Provenance.Seed, a.Matrices[3], b.Matrices[3])
	}
	code, res, _ = rebuild("--max-bytes", "1MB", ad)
	if code != 2 || res.Verdict != "error" || len(res.Findings) != 1 || res.Findings[0].Code != "check.invalid" || !strings.Contains(res.Findings[0].Message, "more than the 1.0 MB allowed") || len(res.Matrices) != 0 || res.Compared != 0 {
		t.Errorf("over --max-bytes: exit %d, %s %v", code, res.Verdict, res.Findings)
	}
	// audit --base/--tuned with Hub ids and the sampling flags (16 rows
	// may leave a module undecided: warn, not fail).
	code, out, errs := cli(t, "audit", "--json", "--no-progress", "--claims", "demo", "--base", "clefcheck/demo-base@world-1", "--tuned", "clefcheck/demo-clef@world-1", "--rows", "16", "--seed", "5", ad)
	var au struct {
		Verdict string       `json:"verdict"`
		Rebuild *rebuildJSON `json:"rebuild"`
	}
	if err := json.Unmarshal([]byte(out), &au); err != nil || code != 0 || (au.Verdict != "pass" && au.Verdict != "warn") || au.Rebuild == nil || au.Rebuild.Sample == nil || au.Rebuild.Sample.Seed != 5 || au.Rebuild.Sample.RowsPerModule != 16 || !strings.Contains(errs, "rebuild plan: 16 rows") {
		t.Errorf("audit: exit %d %v: %s\n%s", code, err, out, errs)
	}
	for _, args := range [][]string{
		{"rebuild", "--rows", "8", "--full", ad},
		{"rebuild", "--rows", "1", ad},
		{"rebuild", "--max-bytes", "lots", ad},
		{"rebuild", "--base", "x", ad},
		{"rebuild", ad}, // no claims: no checkpoints
		{"audit", "--rows", "8", ad},
	} {
		if code, _, errs := cli(t, args...); code != 2 || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
