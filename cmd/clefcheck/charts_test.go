package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditCharts: audit --charts writes the heatmaps and every pair's
// spectrum as SVG documents that parse, with the rebuild's residual/noise
// heatmap when the checkpoints are given.
func TestAuditCharts(t *testing.T) {
	ad := filepath.Join(worldDir, "adapter")
	dir := filepath.Join(t.TempDir(), "charts")
	code, _, errs := cli(t, "audit", "--no-progress", "--claims", "demo", "--base", filepath.Join(worldDir, "base"), "--tuned", filepath.Join(worldDir, "tuned"), "--charts", dir, ad)
	if code != 0 || !strings.Contains(errs, "charts written to "+dir) {
		t.Fatalf("audit --charts: exit %d\n%s", code, errs)
	}
	for _, name := range []string{"pair-grid-sigma1.svg", "pair-grid-form.svg", "pair-grid-r2n.svg", "spectra/model.language_model.layers.43.self_attn.q_proj.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var doc struct {
			XMLName xml.Name
			Title   string `xml:"title"`
		}
		if err := xml.Unmarshal(data, &doc); err != nil || doc.XMLName.Local != "svg" || doc.Title == "" {
			t.Errorf("%s is not an SVG with a title: %v %+v", name, err, doc)
		}
	}
	spectra, _ := filepath.Glob(filepath.Join(dir, "spectra", "*.svg"))
	if len(spectra) != 186 {
		t.Errorf("%d spectra, want one per pair (186)", len(spectra))
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "pair-grid-r2n.svg")); !strings.Contains(string(data), "claimed ") {
		t.Error("the residual/noise heatmap does not show the claimed band")
	}
}
