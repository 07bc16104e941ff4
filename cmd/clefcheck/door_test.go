package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// timings are the JSON keys whose values are clock readings (and, for
// "reread", how many bytes parallel reads happened to deliver out of
// order); everything else must be equal byte for byte.
var timings = map[string]bool{"seconds": true, "started": true, "latency": true, "latency_ms": true, "kernel": true, "reread": true}

// normalized re-encodes JSON with the timings removed.
func normalized(t *testing.T, data []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("not JSON: %v\n%.400s", err, data)
	}
	var strip func(any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, y := range x {
				if timings[k] {
					delete(x, k)
				} else {
					strip(y)
				}
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	strip(v)
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOneDoor: every command that checks something prints, with --json,
// exactly the output of the same job run through runner.Run — the JSON a
// page downloads — apart from the timings.
func TestOneDoor(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	ad, base, tuned := filepath.Join(dir, "adapter"), filepath.Join(dir, "base"), filepath.Join(dir, "tuned")
	ref := filepath.Join(worldDir, "reference")
	server := serve(t, "nvfp4", "") // drifts: findings to compare as well
	capture := t.TempDir()
	if code, _ := runDecide(t, server, capture); code != 1 {
		t.Fatalf("the nvfp4 capture: exit %d", code)
	}
	recs := []string{filepath.Join(worldDir, "records", "arc-mini.jsonl"), filepath.Join(worldDir, "records", "intents-mini.jsonl")}

	cases := []struct {
		name string
		args []string
		spec func(n *runner.Native) *jobs.Spec
		of   func(o *jobs.Output) any
	}{
		{"audit", []string{"audit", "--json", "--no-progress", "--claims", "demo", "--mode", "exact", "--base", base, "--tuned", tuned, ad},
			func(n *runner.Native) *jobs.Spec {
				return &jobs.Spec{Kind: jobs.KindAudit, Mode: "exact", Claims: "demo", Label: ad, Adapter: must(n.Folder(ad)), Base: must(n.Folder(base)), Tuned: must(n.Folder(tuned))}
			}, func(o *jobs.Output) any { return o.Audit }},
		{"audit randomized", []string{"audit", "--json", "--no-progress", "--randomized", ad},
			func(n *runner.Native) *jobs.Spec {
				return &jobs.Spec{Kind: jobs.KindAudit, Mode: "randomized", Label: ad, Adapter: must(n.Folder(ad))}
			}, func(o *jobs.Output) any { return o.Audit }},
		{"rebuild", []string{"rebuild", "--json", "--no-progress", "--base", base, "--tuned", tuned, ad},
			func(n *runner.Native) *jobs.Spec {
				return &jobs.Spec{Kind: jobs.KindRebuild, Label: base + " and " + tuned, Adapter: must(n.Folder(ad)), Base: must(n.Folder(base)), Tuned: must(n.Folder(tuned))}
			}, func(o *jobs.Output) any { return o.Rebuild }},
		{"hidden", []string{"hidden", "--json", filepath.Join(ref, "hidden"), filepath.Join(capture, "hidden")},
			func(n *runner.Native) *jobs.Spec {
				return &jobs.Spec{Kind: jobs.KindHidden, Tol: &defaultTol, Ref: must(n.Folder(filepath.Join(ref, "hidden"))), Cand: must(n.Folder(filepath.Join(capture, "hidden")))}
			}, func(o *jobs.Output) any { return o.Hidden }},
		{"answers", []string{"answers", "--json", "--records", recs[0], filepath.Join(ref, "answers"), filepath.Join(capture, "answers")},
			func(n *runner.Native) *jobs.Spec {
				return &jobs.Spec{Kind: jobs.KindAnswers, RecordFiles: must(n.Files(recs[0])), Ref: must(n.Folder(filepath.Join(ref, "answers"))), Cand: must(n.Folder(filepath.Join(capture, "answers")))}
			}, func(o *jobs.Output) any { return o.Answers }},
		{"decide", []string{"decide", "--json", "--no-progress", "--hidden", "--server", server, "--records", recs[0], "--records", recs[1], "--reference", ref},
			func(n *runner.Native) *jobs.Spec {
				return &jobs.Spec{Kind: jobs.KindDecisions, Server: server, Concurrency: 4, Timeout: 60e9, Hidden: true, RecordFiles: must(n.Files(recs...)), Ref: must(n.Folder(ref))}
			}, func(o *jobs.Output) any { return o.Decisions }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, stdout, errs := cli(t, c.args...)
			n := &runner.Native{}
			out, err := runner.Run(context.Background(), c.spec(n), n.Host(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := writeJSON(&buf, c.of(out)); err != nil {
				t.Fatal(err)
			}
			got, want := normalized(t, []byte(stdout)), normalized(t, buf.Bytes())
			if !bytes.Equal(got, want) {
				if d := os.Getenv("CLEFCHECK_DOOR_DIFF"); d != "" {
					os.WriteFile(filepath.Join(d, "cli.json"), got, 0o644)
					os.WriteFile(filepath.Join(d, "job.json"), want, 0o644)
				}
				t.Fatalf("the CLI's JSON differs from the job's output\nCLI (stderr %q):\n%.1500s\njob:\n%.1500s", errs, got, want)
			}
			if len(got) < 200 {
				t.Fatalf("suspiciously small output: %s", got)
			}
		})
	}
}

var defaultTol = report.DefaultHidden

func must(in *jobs.Input, err error) *jobs.Input {
	if err != nil {
		panic(err)
	}
	return in
}
