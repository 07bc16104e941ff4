package runner

import (
	"context"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/hub/hubtest"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// urlHost opens every URL input as the browser's engine worker does.
func urlHost() Host { return Host{Open: func(in *jobs.Input) (fs.FS, error) { return OpenURL(in) }} }

// TestSourceJob: the pages' source job resolves a Hub source to its commit
// and lists its files with the digests the Hub lists; a plain URL is
// itself, a local path is refused with what to do instead.
func TestSourceJob(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	commit, err := h.Add("kvit-s/clef-lora-r256", "main", filepath.Join(worldDir, "adapter"), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, src := range []string{"kvit-s/clef-lora-r256@main", "hf://kvit-s/clef-lora-r256", h.Endpoint + "/kvit-s/clef-lora-r256/tree/main"} {
		out, err := Run(ctx, &jobs.Spec{Kind: jobs.KindSource, Adapter: &jobs.Input{URL: src, Endpoint: h.Endpoint}}, urlHost(), nil)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		s := out.Source
		if s == nil || s.Kind != "hub" || s.Commit != commit || s.Revision != "main" || s.Repo != "kvit-s/clef-lora-r256" || len(out.Listing) != 3 {
			t.Fatalf("%s: %+v %+v", src, s, out.Listing)
		}
		for _, f := range out.Listing {
			if strings.HasSuffix(f.Name, ".safetensors") != (len(f.Listed) == 64) {
				t.Errorf("%s: listing %+v", src, f)
			}
		}
	}
	out, err := Run(ctx, &jobs.Spec{Kind: jobs.KindSource, Adapter: &jobs.Input{URL: "https://example.org/a/"}}, urlHost(), nil)
	if err != nil || out.Source.Kind != "url" {
		t.Fatalf("url: %+v %v", out, err)
	}
	if _, err := Run(ctx, &jobs.Spec{Kind: jobs.KindSource, Adapter: &jobs.Input{URL: "./here"}}, urlHost(), nil); err == nil || !strings.Contains(err.Error(), "choose its files") {
		t.Errorf("a local path: %v", err)
	}
	// The audit of the same source names the engine the spec gives, and
	// comes with its attestation, its badge and its provenance in Markdown.
	out, err = Run(ctx, &jobs.Spec{Kind: jobs.KindAudit, Claims: "demo", Engine: "site 0123abcd", Adapter: &jobs.Input{URL: "kvit-s/clef-lora-r256@main", Endpoint: h.Endpoint}}, urlHost(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := out.Audit
	if a.Verdict != "pass" || a.Provenance.Tool.Engine != "site 0123abcd" || a.Provenance.Source.Commit != commit {
		t.Fatalf("audit: %s %+v", a.Verdict, a.Provenance)
	}
	var st struct {
		Type    string `json:"_type"`
		Subject []struct{ Name string }
	}
	if err := json.Unmarshal(out.Attestation, &st); err != nil || st.Type != "https://in-toto.io/Statement/v1" || len(st.Subject) != 3 || out.NoAttestation != "" {
		t.Errorf("attestation %s (%v, %q)", out.Attestation, err, out.NoAttestation)
	}
	if !strings.Contains(out.Badge, "<svg") || !strings.Contains(out.Badge, "PASS") {
		t.Errorf("badge %s", out.Badge)
	}
	for _, want := range []string{"## Provenance", "commit `" + commit + "`", "engine site 0123abcd", "| matches |", "claims: demo, SHA-256"} {
		if !strings.Contains(out.Markdown, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, out.Markdown)
		}
	}
}

// TestHiddenLiveOperator: a live capture with the operator's records and
// references (folders) instead of the demo world's.
func TestHiddenLiveOperator(t *testing.T) {
	_, server := demoSite(t)
	out, _, err := run(t, jobs.Spec{Kind: jobs.KindHidden, Server: server, RecordFiles: &jobs.Input{Files: "records"}, Ref: &jobs.Input{Files: "reference"}})
	if err != nil {
		t.Fatal(err)
	}
	if h := out.Hidden; h.Verdict != "pass" || h.Summary.Compared != 36 || !strings.Contains(out.Note, "reference from local files") {
		t.Fatalf("%s %+v %q", h.Verdict, h.Summary, out.Note)
	}
}

// TestCodesJob: the codes page's job answers the documented codes.
func TestCodesJob(t *testing.T) {
	out, err := Run(context.Background(), &jobs.Spec{Kind: jobs.KindCodes}, urlHost(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range out.Codes {
		found = found || (d.Code == "pair.missing" && d.When != "")
	}
	if len(out.Codes) < 25 || !found {
		t.Errorf("%d codes, pair.missing documented: %v", len(out.Codes), found)
	}
}

// TestTablesJob: an audit answers the first page of its tables (every
// column explained), the engine keeps them, and a table job answers
// another view of one, or its CSV; the summary lines come along.
func TestTablesJob(t *testing.T) {
	out, evs, err := run(t, jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{Files: "adapter"}, Mode: report.ModeQuick, Claims: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*report.TablePage{}
	for _, tp := range out.Tables {
		got[tp.ID] = tp
		for _, c := range tp.Cols {
			if c.Tip == "" && tp.ID != "provenance-info" {
				t.Errorf("%s: column %s explains nothing", tp.ID, c.Name)
			}
		}
	}
	m := got["matrices"]
	if m == nil || m.Total != 186 || len(m.Rows) != RowsPerPage || m.Pages != 8 || len(m.Layers) != 24 || len(m.Groups) != 12 || got["findings"] == nil || got["provenance-files"] == nil {
		t.Fatalf("tables: %+v", got)
	}
	if len(out.Lines) != 2 || !strings.Contains(out.Lines[0], "550,272 parameters") || !strings.Contains(out.Lines[1], "claims: demo") {
		t.Errorf("summary lines %q", out.Lines)
	}
	inventory := false
	for _, e := range evs {
		inventory = inventory || (e.Inventory != nil && len(e.Lines) == 2 && strings.Contains(e.Lines[0], "audit running"))
	}
	if !inventory {
		t.Error("the inventory event has no summary lines")
	}
	v := report.View{Layer: "43", Sort: 4, Desc: true}
	o, err := Run(context.Background(), &jobs.Spec{Kind: jobs.KindTable, Table: "matrices", View: &v}, urlHost(), nil)
	if err != nil || len(o.Tables) != 1 {
		t.Fatalf("table job: %v %+v", err, o)
	}
	p := o.Tables[0]
	if p.Shown != 7 || p.Total != 186 || p.View != v { // layer 43 is full attention: 3 mlp and 4 attention modules
		t.Errorf("layer 43 by shape: shown %d, first %v", p.Shown, p.Rows[0].Cells[:4])
	}
	for i, r := range p.Rows {
		if i > 0 && *r.Cells[3].N > *p.Rows[i-1].Cells[3].N {
			t.Errorf("row %d is larger than the one before, sorted descending", i)
		}
		if r.Layer != 43 {
			t.Errorf("row of layer %d under the layer-43 filter", r.Layer)
		}
	}
	o, err = Run(context.Background(), &jobs.Spec{Kind: jobs.KindTable, Table: "matrices", View: &v, CSV: true}, urlHost(), nil)
	if err != nil || strings.Count(o.CSV, "\r\n") != 8 || !strings.HasPrefix(o.CSV, "status,module,layer,out × in,r,rank,σ₁,form dev.,report σ / tol,method\r\n") {
		t.Errorf("CSV: %v %q", err, o.CSV)
	}
	if _, err := Run(context.Background(), &jobs.Spec{Kind: jobs.KindTable, Table: "nope"}, urlHost(), nil); err == nil {
		t.Error("a table never made was answered")
	}
}
