package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestHostileFIFO: a FIFO given as an input file (or inside an input
// folder) is refused before it is opened: a read would block for ever.
func TestHostileFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "adapter_model.safetensors"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(`{"r": 8, "lora_alpha": 8, "target_modules": ["q_proj"]}`), 0o644)
	n := &Native{}
	in, err := n.Folder(dir)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *jobs.Output, 1)
	go func() {
		o, _ := Run(context.Background(), &jobs.Spec{Kind: jobs.KindAudit, Mode: report.ModeQuick, Adapter: in}, n.Host(), nil)
		done <- o
	}()
	select {
	case o := <-done:
		if o.Audit.Verdict == report.VerdictPass {
			t.Fatalf("a FIFO passed: %v", o.Audit.Findings)
		}
		found := false
		for _, f := range o.Audit.Findings {
			found = found || strings.Contains(f.Message, "not a regular file")
		}
		if !found {
			t.Errorf("no finding says the FIFO was refused: %v", o.Audit.Findings)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the audit hangs on a FIFO")
	}
	if _, err := n.Files(filepath.Join(dir, "adapter_model.safetensors")); err == nil {
		t.Error("a FIFO was attached as a file")
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
}
