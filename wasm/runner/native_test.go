package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// TestHostileDatasetPathEscape: a record whose dataset is "../../../x"
// must not make decide --out write outside its folder.
func TestHostileDatasetPathEscape(t *testing.T) {
	_, server := demoSite(t)
	top := t.TempDir()
	out := filepath.Join(top, "a", "b", "out")
	n := &Native{OutDir: out}
	rec := report.Record{ID: "arc-mini/q01", Dataset: "../../../escaped", Prompt: "Which?", Options: []string{"A", "B", "C", "D"}}
	o, err := Run(context.Background(), &jobs.Spec{Kind: jobs.KindDecisions, Records: []report.Record{rec}, Server: server, Save: true}, n.Host(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Decisions.Verdict != report.VerdictError {
		t.Errorf("verdict %s: %v", o.Decisions.Verdict, o.Decisions.Findings)
	}
	filepath.Walk(top, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasPrefix(p, out+string(filepath.Separator)) {
			t.Errorf("wrote %s, outside %s", p, out)
		}
		return nil
	})
	// The host refuses such names itself, whoever asks.
	for _, name := range []string{"../x", "/etc/x", "a/../../x", "", ".", `a\..\x`} {
		if w, err := n.Host().Create(name); err == nil {
			w.Close()
			t.Errorf("Create(%q) accepted", name)
		}
	}
}

// TestMissingInputs: a path that is not there is verdict error with
// input.missing, for every check.
func TestMissingInputs(t *testing.T) {
	n := &Native{}
	missing, _ := n.Folder(filepath.Join(t.TempDir(), "nope"))
	for _, spec := range []*jobs.Spec{
		{Kind: jobs.KindAudit, Adapter: missing},
		{Kind: jobs.KindRebuild, Adapter: missing, Base: missing, Tuned: missing},
		{Kind: jobs.KindHidden, Ref: missing, Cand: missing},
		{Kind: jobs.KindAnswers, Ref: missing, Cand: missing},
		{Kind: jobs.KindDecisions, RecordFiles: missing, Server: "http://127.0.0.1:1"},
	} {
		o, err := Run(context.Background(), spec, n.Host(), nil)
		if err != nil {
			t.Fatalf("%s: %v", spec.Kind, err)
		}
		var oc report.Outcome
		switch {
		case o.Audit != nil:
			oc = o.Audit.Outcome
		case o.Rebuild != nil:
			oc = o.Rebuild.Outcome
		case o.Hidden != nil:
			oc = o.Hidden.Outcome
		case o.Answers != nil:
			oc = o.Answers.Outcome
		case o.Decisions != nil:
			oc = o.Decisions.Outcome
		}
		unchecked(t, spec.Kind, oc, nil, report.InputMissing, "nope")
	}
	// An empty folder: nothing to audit, in every mode.
	empty, _ := n.Folder(t.TempDir())
	for _, mode := range report.Modes {
		o, err := Run(context.Background(), &jobs.Spec{Kind: jobs.KindAudit, Mode: mode, Adapter: empty}, n.Host(), nil)
		if err != nil {
			t.Fatal(err)
		}
		unchecked(t, "an empty folder, "+string(mode), o.Audit.Outcome, nil, report.InputMissing, "neither")
	}
}
