package runner

import (
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/hub/hubtest"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// copyDir copies a folder of files (one level of subfolders is enough for
// a checkpoint).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// flipHead changes the first byte of a tensor in a checkpoint folder.
func flipHead(t *testing.T, dir, name string) {
	t.Helper()
	ck, err := safetensors.OpenCheckpoint(source.Dir(dir), ".", "model")
	if err != nil {
		t.Fatal(err)
	}
	ti, r, ok := ck.Tensor(name)
	ck.Close()
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	p := filepath.Join(dir, r.Name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[ti.Offset] ^= 0x40
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSampledRebuildOverHub: a rebuild job with only an adapter (on the
// Hub simulator) and the demo claims reads the claims' base and tuned
// checkpoints (clefcheck/demo-base and clefcheck/demo-clef at world-1) on
// the adapter's Hub, pinned to their commits, by range: the plan is an
// event before any tensor byte is fetched, the CDN is asked for no more
// of the checkpoints than the plan (the heads in a shard's first 64 KiB come with its
// header), the identity check finds the 186 matrices, and the result
// names the commits and the seed. A tuned checkpoint with one more tensor
// changed (the final norm) is caught by the identity check over Range:
// 187 differ, pair.missing and rebuild.error (not a claimed difference).
// A plan over max_bytes fetches nothing.
func TestSampledRebuildOverHub(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	var asked, requests atomic.Int64
	h.Fault = func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasPrefix(r.URL.Path, "/clefcheck--demo-lora/") {
			return false // the adapter's reads: not the checkpoints'
		}
		var a, b int64
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &a, &b); err == nil {
			asked.Add(b - a + 1)
		}
		requests.Add(1)
		return false
	}
	commits := map[string]string{}
	for _, x := range []struct{ id, branch, dir string }{
		{"clefcheck/demo-lora", "main", filepath.Join(worldDir, world.AdapterDir)},
		{"clefcheck/demo-base", "world-1", filepath.Join(worldDir, world.BaseDir)},
		{"clefcheck/demo-clef", "world-1", filepath.Join(worldDir, world.TunedDir)},
	} {
		c, err := h.Add(x.id, x.branch, x.dir, "")
		if err != nil {
			t.Fatal(err)
		}
		commits[x.id] = c
	}
	tampered := t.TempDir()
	copyDir(t, filepath.Join(worldDir, world.TunedDir), tampered)
	flipHead(t, tampered, "model.language_model.norm.weight")
	if _, err := h.Add("clefcheck/demo-clef", "tampered", tampered, ""); err != nil {
		t.Fatal(err)
	}
	hh := Host{Open: func(in *jobs.Input) (fs.FS, error) { return OpenURL(in) }}
	job := func(spec jobs.Spec) (*report.Rebuild, []jobs.Event, int64, int64) {
		t.Helper()
		var evs []jobs.Event
		planned := false
		out, err := Run(t.Context(), &spec, hh, func(e jobs.Event) {
			if e.Plan != nil {
				planned = true
				asked.Store(0)
				requests.Store(0)
			}
			evs = append(evs, e)
		})
		if err != nil || out.Rebuild == nil {
			t.Fatalf("%v %+v", err, out)
		}
		if !planned {
			t.Fatalf("no plan event: %v", out.Rebuild.Findings)
		}
		return out.Rebuild, evs, asked.Load(), requests.Load()
	}
	adapter := &jobs.Input{URL: "hf://clefcheck/demo-lora@main", Endpoint: h.Endpoint}
	res, evs, got, reqs := job(jobs.Spec{Kind: jobs.KindRebuild, Adapter: adapter, Claims: "demo", Rows: 16, Seed: 3})
	if res.Verdict == report.VerdictFail || res.Verdict == report.VerdictError || res.Mode != report.RebuildSampled || len(res.Matrices) != 186 || len(res.Differing) != 186 || res.Compared != 809 {
		t.Fatalf("%s %s: %d matrices, %d of %d differ: %v", res.Verdict, res.Mode, len(res.Matrices), len(res.Differing), res.Compared, res.Findings)
	}
	if evs[0].Plan == nil || evs[0].Plan.Bytes != res.Plan.Bytes || res.BytesRead != res.Plan.Bytes || res.Plan.MaxBytes != jobs.DefaultMaxBytes {
		t.Errorf("first event %+v; plan %+v, read %d", evs[0], res.Plan, res.BytesRead)
	}
	if got > res.Plan.Bytes || got < res.Plan.Bytes-6*64<<10 || reqs > int64(res.Plan.IdentityReads)+2*res.Plan.Rows {
		t.Errorf("the CDN was asked for %d bytes in %d requests; the plan: %d bytes, %d heads, %d rows", got, reqs, res.Plan.Bytes, res.Plan.IdentityReads, res.Plan.Rows)
	}
	roles := map[string]report.SourceInfo{}
	for _, in := range res.Provenance.Inputs {
		roles[in.Role] = in.SourceInfo
	}
	if b, tu := roles["base"], roles["tuned"]; b.Kind != "hub" || b.Repo != "clefcheck/demo-base" || b.Commit != commits["clefcheck/demo-base"] || b.Revision != "world-1" || tu.Commit != commits["clefcheck/demo-clef"] || res.Provenance.Seed != "3" || res.Sample.Seed != 3 {
		t.Errorf("provenance %+v, seed %s", roles, res.Provenance.Seed)
	}
	// The result says the bounds it was judged against: the demo claims'.
	if b := res.Bounds; b == nil || b.ResidualToNoiseMax != 1.005 || b.ResidualToNoiseMin != 0.6 || b.RebuiltRelErrorMax != 0.0017 || b.From != "claims demo" {
		t.Errorf("bounds %+v", b)
	}
	if b := rebuildBounds(nil); b.ResidualToNoiseMax != rebuild.DefaultRatioBound || b.RebuiltRelErrorMax != 0 || !strings.Contains(b.From, "default") {
		t.Errorf("bounds without claims %+v", b)
	}
	t.Logf("planned %d bytes (%d heads, %d rows); the CDN was asked for %d in %d requests", res.Plan.Bytes, res.Plan.IdentityReads, res.Plan.Rows, got, reqs)

	// One more tensor differs.
	base := &jobs.Input{URL: "hf://clefcheck/demo-base@world-1", Endpoint: h.Endpoint}
	tuned := &jobs.Input{URL: "hf://clefcheck/demo-clef@tampered", Endpoint: h.Endpoint}
	res, _, _, _ = job(jobs.Spec{Kind: jobs.KindRebuild, Adapter: adapter, Base: base, Tuned: tuned, Claims: "demo", Rows: 4, Seed: 3})
	codes := map[report.Code]string{}
	for _, f := range res.Findings {
		if f.Severity == report.Fail {
			codes[f.Code] = f.Subject + ": " + f.Message
		}
	}
	if res.Verdict != report.VerdictFail || len(res.Differing) != 187 || !strings.Contains(codes[report.PairMissing], "norm.weight") || !strings.Contains(codes[report.RebuildError], "model.language_model.norm.weight") {
		t.Errorf("tampered tuned: %s, %d differ, %v", res.Verdict, len(res.Differing), codes)
	}

	// Over the budget: nothing fetched.
	res, _, got, reqs = job(jobs.Spec{Kind: jobs.KindRebuild, Adapter: adapter, Claims: "demo", Rows: 16, MaxBytes: 1 << 20})
	if res.Verdict != report.VerdictError || res.Findings[0].Code != report.CheckInvalid || got != 0 || reqs != 0 || len(res.Matrices) != 0 {
		t.Errorf("over budget: %s %v; %d bytes in %d requests", res.Verdict, res.Findings, got, reqs)
	}
}
