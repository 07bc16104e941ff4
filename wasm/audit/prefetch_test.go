package audit

import (
	"context"
	"encoding/json"
	"io/fs"
	"path"
	"slices"
	"sync"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// openLog is a file system that notes each file opened in a shared log.
type openLog struct {
	fs.FS
	mu  *sync.Mutex
	log *[]string
}

func (o openLog) Open(name string) (fs.File, error) {
	o.mu.Lock()
	*o.log = append(*o.log, path.Base(name))
	o.mu.Unlock()
	return o.FS.Open(name)
}

// TestPrefetchBeforeReport: with claims and a Remote, Prefetch gets the
// pairs Remote will get, in the same order and places, before the
// extraction report is opened (the browser's dealer reads their bytes
// while the engine worker parses it); Remote's jobs then carry the report's
// σ, and the audit is the same as without Prefetch. Without claims the
// report comes first (the inventory's expectations) and Prefetch is not
// called.
func TestPrefetchBeforeReport(t *testing.T) {
	dir := load(t).write(t, 1)
	for _, withClaims := range []bool{true, false} {
		var mu sync.Mutex
		var log []string
		var pre []Job
		opt := Options{Mode: report.ModeRandomized}
		if withClaims {
			opt.Claims = demoClaims(t)
		}
		plain := run(t, dir, opt)
		inner := remoteShards(t, dir, opt, 2)
		opt.Prefetch = func(ctx context.Context, jobs []Job) {
			if pre != nil {
				t.Error("Prefetch called twice")
			}
			pre = slices.Clone(jobs)
			mu.Lock()
			log = append(log, "prefetch")
			mu.Unlock()
		}
		var got []Job
		opt.Remote = func(ctx context.Context, jobs []Job, add func(int64)) ([]Figures, error) {
			got = slices.Clone(jobs)
			return inner(ctx, jobs, add)
		}
		res, err := Run(context.Background(), openLog{source.Dir(dir), &mu, &log}, ".", opt)
		if err != nil {
			t.Fatal(err)
		}
		rep, at := slices.Index(log, "extraction-report.json"), slices.Index(log, "prefetch")
		if rep < 0 {
			t.Fatalf("claims %v: the report was never opened: %v", withClaims, log)
		}
		if !withClaims {
			if pre != nil {
				t.Errorf("no claims: Prefetch was called (%d jobs)", len(pre))
			}
		} else {
			if at < 0 || at > rep {
				t.Errorf("Prefetch at %d, the report opened at %d: %v", at, rep, log)
			}
			if len(pre) != len(got) || len(got) == 0 {
				t.Fatalf("Prefetch got %d jobs, Remote %d", len(pre), len(got))
			}
			for i := range got {
				p, g := pre[i], got[i]
				if p.Ref != nil {
					t.Errorf("%s: a reference σ before the report was read", p.Module)
				}
				if len(g.Ref) == 0 {
					t.Errorf("%s: Remote's job has no reference σ", g.Module)
				}
				g.Ref = nil
				if p.Module != g.Module || p.Bytes != g.Bytes || p.File != g.File || p.Begin != g.Begin || p.End != g.End {
					t.Fatalf("job %d: Prefetch %+v, Remote %+v", i, p, g)
				}
			}
		}
		plain.Summary.Seconds, res.Summary.Seconds = 0, 0
		pj, _ := json.Marshal(plain)
		rj, _ := json.Marshal(res)
		if string(pj) != string(rj) {
			t.Errorf("claims %v: the audit with Prefetch differs:\n%s\n%s", withClaims, rj, pj)
		}
	}
}
