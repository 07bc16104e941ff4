package source_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestURLChangesMidAudit: a URL whose file is replaced after the audit's
// first read of it (a branch moved to a new upload) ends the audit with
// ERROR and input.changed when the server's answers say so (a new total
// size, a new strong ETag), instead of auditing a mix of two files. A weak
// ETag that changes over the same bytes, or a stable strong one, changes
// nothing: the audit passes.
func TestURLChangesMidAudit(t *testing.T) {
	dir := t.TempDir()
	if err := world.Generate(dir, 1); err != nil {
		t.Fatal(err)
	}
	const weights = "adapter_model.safetensors"
	orig, err := os.ReadFile(filepath.Join(dir, "adapter", weights))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(orig)
	flipped[len(flipped)-100] ^= 0x40 // inside the last tensor's data
	grown := append(bytes.Clone(orig), make([]byte, 4096)...)
	// serve serves dir, the weights as the original until the after-th
	// request for them, then as replaced (after 0: never replaced).
	serve := func(after int32, before, etagAfter string, replaced []byte) (*httptest.Server, *atomic.Int32) {
		var reads atomic.Int32
		fsrv := http.FileServer(http.Dir(dir))
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if path.Base(r.URL.Path) != weights {
				fsrv.ServeHTTP(w, r)
				return
			}
			body, etag := orig, before
			if n := reads.Add(1); after > 0 && n > after {
				body, etag = replaced, etagAfter
			}
			if etag != "" {
				w.Header().Set("ETag", etag)
			}
			http.ServeContent(w, r, weights, time.Time{}, bytes.NewReader(body))
		})), &reads
	}
	audit := func(hs *httptest.Server) *report.Outcome {
		var n runner.Native
		out, err := runner.Run(context.Background(), &jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{URL: hs.URL + "/adapter/"}, Claims: "demo", Mode: report.ModeQuick}, n.Host(), nil)
		if err != nil || out.Audit == nil {
			t.Fatalf("%v %+v", err, out)
		}
		return &out.Audit.Outcome
	}
	// How many requests an audit makes for the weights: the mid-audit
	// change comes half-way.
	hs, reads := serve(0, "", "", nil)
	if o := audit(hs); o.Verdict != report.VerdictPass {
		t.Fatalf("unchanged: %s %s", o.Verdict, codes(o.Findings))
	}
	hs.Close()
	total := reads.Load()
	if total < 4 {
		t.Fatalf("the weights took %d requests: too few to change mid-audit", total)
	}
	for _, c := range []struct {
		name             string
		before, after    string // ETags
		replaced         []byte
		changed          bool
		inMessage, inFix string
	}{
		{"strong ETag changes", `"v1"`, `"v2"`, flipped, true, `ETag went from "v1" to "v2"`, "commit URL"},
		{"size changes, no ETag", "", "", grown, true, "size went from", "branch or tag moved"},
		{"weak ETag changes, same bytes", `W/"a"`, `W/"b"`, orig, false, "", ""},
		{"strong ETag stays", `"v1"`, `"v1"`, orig, false, "", ""},
	} {
		for _, after := range []int32{1, total / 2} {
			t.Run(fmt.Sprintf("%s, after %d of %d reads", c.name, after, total), func(t *testing.T) {
				hs, reads := serve(after, c.before, c.after, c.replaced)
				defer hs.Close()
				res := audit(hs)
				if reads.Load() <= after {
					t.Fatalf("the weights were read %d times: the change was never seen", reads.Load())
				}
				if !c.changed {
					if res.Verdict != report.VerdictPass {
						t.Fatalf("verdict %s, want pass: %s", res.Verdict, codes(res.Findings))
					}
					return
				}
				if res.Verdict != report.VerdictError {
					t.Fatalf("verdict %s, want error: %s", res.Verdict, codes(res.Findings))
				}
				var seen int
				for _, f := range res.Findings {
					switch {
					case f.Code == report.InputChanged:
						seen++
						if !strings.Contains(f.Message, c.inMessage) || !strings.Contains(f.Message, c.inFix) || !strings.Contains(f.Message, weights) {
							t.Errorf("input.changed says %q", f.Message)
						}
					case f.Severity == report.Fail:
						t.Errorf("a failure from mixed bytes: %s: %s", f.Code, f.Message)
					}
				}
				if seen == 0 {
					t.Fatalf("no input.changed: %s", codes(res.Findings))
				}
				t.Logf("%d findings; the first: %s", len(res.Findings), res.Findings[0].Message)
			})
		}
	}
}
