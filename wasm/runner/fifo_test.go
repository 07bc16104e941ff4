//go:build unix

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
