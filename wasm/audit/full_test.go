package audit

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// TestFullTwinTimes times the engine alone on the 1.40 GB twin (set
// CLEFCHECK_FULL): natively, or under GOOS=js GOARCH=wasm in Node, where it
// measures what one browser worker's engine costs without the browser.
func TestFullTwinTimes(t *testing.T) {
	full := os.Getenv("CLEFCHECK_FULL")
	if full == "" {
		t.Skip("set CLEFCHECK_FULL to the twin (make bench-browser makes it)")
	}
	for _, o := range []Options{{Mode: report.ModeQuick, Workers: 1}, {Mode: report.ModeRandomized, Workers: 1}} {
		start := time.Now()
		res, err := Run(context.Background(), source.Dir(filepath.Join(full, "adapter")), ".", o)
		if err != nil || res.Verdict == "fail" {
			t.Fatalf("%s: %v %v", mode(o), err, res.Findings)
		}
		t.Logf("%s audit, one goroutine: %v", mode(o), time.Since(start).Round(10*time.Millisecond))
	}
}
