package world_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestFullLayers: the twin of the first two layers holds the real
// adapter's pairs of those layers (shapes and names of the claims
// profile), a config that targets just those layers and a report that
// lists just those pairs; audited without claims it passes, and against
// the clef-lora-r256 claims it fails (pairs missing).
func TestFullLayers(t *testing.T) {
	dir := t.TempDir()
	n, err := world.FullLayers(dir, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	p, err := claims.Builtin("clef-lora-r256")
	if err != nil {
		t.Fatal(err)
	}
	var want []claims.Pair
	var bytes int64
	for _, pr := range p.Pairs() {
		if pr.Layer < p.FirstLayer+2 {
			want = append(want, pr)
			bytes += 2 * int64(p.Rank) * int64(pr.Out+pr.In)
		}
	}
	if len(want) == 0 || len(want) == len(p.Pairs()) || n != bytes {
		t.Fatalf("%d of %d pairs kept, %d bytes written (want %d)", len(want), len(p.Pairs()), n, bytes)
	}
	ad := filepath.Join(dir, world.AdapterDir)
	var cfg struct {
		Layers []int `json:"layers_to_transform"`
	}
	data, err := os.ReadFile(filepath.Join(ad, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil || !slices.Equal(cfg.Layers, []int{p.FirstLayer, p.FirstLayer + 1}) {
		t.Fatalf("layers_to_transform %v (%v)", cfg.Layers, err)
	}
	res, err := audit.Run(context.Background(), source.Dir(ad), ".", audit.Options{Mode: report.ModeQuick})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "pass" || res.Summary.Pairs != len(want) || res.Summary.Report == "" {
		t.Fatalf("without claims: %s, %d pairs (want %d), report %q: %v", res.Verdict, res.Summary.Pairs, len(want), res.Summary.Report, res.Findings)
	}
	for _, m := range res.Matrices {
		if !slices.ContainsFunc(want, func(pr claims.Pair) bool { return pr.Module == m.Module }) {
			t.Fatalf("pair %s is not one of the first two layers'", m.Module)
		}
	}
	res, err = audit.Run(context.Background(), source.Dir(ad), ".", audit.Options{Mode: report.ModeQuick, Claims: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "fail" {
		t.Fatalf("against the clef-lora-r256 claims: %s, want fail (pairs missing)", res.Verdict)
	}
}
