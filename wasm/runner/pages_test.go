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
