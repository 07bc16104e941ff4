package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/demo"
	"github.com/kvit-s/clefcheck/wasm/model"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/service"
	"github.com/kvit-s/clefcheck/wasm/source"
)

var worldDir string

func TestMain(m *testing.M) { os.Exit(demo.Main(m.Run, "clefcheck-jobs-", &worldDir)) }

// host opens URLs by range and "files" inputs as folders of the world.
func host() Host {
	return Host{Open: func(in *jobs.Input) (fs.FS, error) {
		switch {
		case in.URL != "":
			h, err := source.NewHTTP(in.URL)
			if err == nil {
				h.Token = in.Token
			}
			return h, err
		case in.Files != "":
			return os.DirFS(filepath.Join(worldDir, in.Files)), nil
		}
		return nil, fmt.Errorf("empty input")
	}}
}

// run runs a spec after a JSON round trip (as the page sends it) and
// returns the output after another one (as the page reads it).
func run(t *testing.T, spec jobs.Spec) (*jobs.Output, []jobs.Event, error) {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var s jobs.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var evs []jobs.Event
	out, err := Run(context.Background(), &s, host(), func(e jobs.Event) {
		b, err := json.Marshal(e)
		if err != nil {
			t.Errorf("event: %v", err)
		}
		var back jobs.Event
		json.Unmarshal(b, &back)
		mu.Lock()
		evs = append(evs, back)
		mu.Unlock()
	})
	if err != nil {
		return nil, evs, err
	}
	b, err = json.Marshal(out)
	if err != nil {
		t.Fatalf("output: %v", err)
	}
	var back jobs.Output
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return &back, evs, nil
}

func TestAuditJobSameAsEngine(t *testing.T) {
	prof, err := claims.Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"quick", "randomized", "exact"} {
		t.Run(mode, func(t *testing.T) {
			out, evs, err := run(t, jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{Files: "adapter"}, Mode: report.Mode(mode), Claims: "demo"})
			if err != nil {
				t.Fatal(err)
			}
			want, err := audit.Run(context.Background(), os.DirFS(filepath.Join(worldDir, "adapter")), ".",
				audit.Options{Claims: prof, Mode: report.Mode(mode), Workers: 1})
			if err != nil {
				t.Fatal(err)
			}
			got := out.Audit
			if got == nil || got.Verdict != "pass" || got.Verdict != want.Verdict || len(got.Matrices) != len(want.Matrices) || got.Summary.Mode != want.Summary.Mode {
				t.Fatalf("job %+v, engine %s %d %s", got, want.Verdict, len(want.Matrices), want.Summary.Mode)
			}
			for i, m := range got.Matrices {
				w := want.Matrices[i]
				if m.Module != w.Module || len(m.Sigma) != len(w.Sigma) || m.NumRank != w.NumRank || m.Method != w.Method {
					t.Fatalf("%s: job %+v, engine %+v", w.Module, m, w)
				}
				for k := range m.Sigma {
					if m.Sigma[k] != w.Sigma[k] {
						t.Fatalf("%s σ%d: %g ≠ %g", w.Module, k, m.Sigma[k], w.Sigma[k])
					}
				}
			}
			inv, final := 0, false
			for _, e := range evs {
				if e.Inventory != nil {
					inv++
					if len(e.Inventory.Matrices) != len(want.Matrices) {
						t.Errorf("inventory has %d pairs", len(e.Inventory.Matrices))
					}
				}
				if e.Status != nil && e.Status.Final {
					final = true
				}
			}
			if inv != 1 || !final {
				t.Errorf("events: %d inventories, final status %v", inv, final)
			}
		})
	}
}

// A claims profile given as JSON is used (the page's "Load claims…"), and
// a profile that contradicts the adapter makes the audit fail.
func TestAuditJobClaimsJSON(t *testing.T) {
	data, err := claims.JSON("demo")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(data, &m)
	m["rank"] = 7
	bad, _ := json.Marshal(m)
	out, _, err := run(t, jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{Files: "adapter"}, Mode: "quick", ClaimsJSON: bad})
	if err != nil {
		t.Fatal(err)
	}
	if out.Audit.Verdict != "fail" {
		t.Fatalf("verdict %s with a claimed rank of 7", out.Audit.Verdict)
	}
	// A check that cannot run ends with verdict error, never fail.
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{Files: "adapter"}, ClaimsJSON: []byte(`{"rank": "x"}`)})
	unchecked(t, "bad claims JSON", out.Audit.Outcome, err, report.CheckInvalid, "claims")
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindAudit, Adapter: &jobs.Input{Files: "adapter"}, Mode: "slow"})
	unchecked(t, "an unknown mode", out.Audit.Outcome, err, report.CheckInvalid, "slow")
	if len(out.Audit.Matrices) != 0 || out.Audit.Summary.Pairs != 0 {
		t.Errorf("an audit that did not run shows figures: %+v", out.Audit.Summary)
	}
	if _, _, err := run(t, jobs.Spec{Kind: "nope"}); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindAudit})
	unchecked(t, "no adapter", out.Audit.Outcome, err, report.CheckInvalid, "no adapter")
}

func TestReconstructJobs(t *testing.T) {
	out, _, err := run(t, jobs.Spec{Kind: jobs.KindOpen, Adapter: &jobs.Input{Files: "adapter"}, Base: &jobs.Input{Files: "base"}, Tuned: &jobs.Input{Files: "tuned"}})
	if err != nil {
		t.Fatal(err)
	}
	ad := os.DirFS(filepath.Join(worldDir, "adapter"))
	ck, err := safetensors.OpenCheckpoint(ad, ".", "adapter_model")
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	if want := rebuild.Modules(ck); !reflect.DeepEqual(out.Modules, want) || out.CkErr != "" {
		t.Fatalf("modules %v (checkpoints: %q), want %v", out.Modules, out.CkErr, want)
	}
	// The adapter is not a checkpoint named model.safetensors.
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindOpen, Base: &jobs.Input{Files: "adapter"}, Tuned: &jobs.Input{Files: "tuned"}})
	if err != nil || !strings.Contains(out.CkErr, "base checkpoint") {
		t.Fatalf("bad base: %v, %q", err, out.CkErr)
	}

	mod := out.Modules
	if len(mod) == 0 {
		mod = rebuild.Modules(ck)
	}
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindSample, Adapter: &jobs.Input{Files: "adapter"}, Module: mod[0], Row0: 3, Col0: 5, Size: 8})
	if err != nil {
		t.Fatal(err)
	}
	want, err := rebuild.Sample(ad, ck, mod[0], 3, 8, 5, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.Block, want) {
		t.Fatalf("block %+v, want %+v", out.Block, want)
	}
	for _, size := range []int{0, jobs.MaxBlock + 1} {
		if _, _, err := run(t, jobs.Spec{Kind: jobs.KindSample, Adapter: &jobs.Input{Files: "adapter"}, Module: mod[0], Size: size}); err == nil {
			t.Errorf("block size %d accepted", size)
		}
	}

	out, evs, err := run(t, jobs.Spec{Kind: jobs.KindRebuild, Adapter: &jobs.Input{Files: "adapter"}, Base: &jobs.Input{Files: "base"}, Tuned: &jobs.Input{Files: "tuned"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Rebuild == nil || out.Rebuild.Verdict != "pass" || len(out.Rebuild.Matrices) == 0 {
		t.Fatalf("rebuild %+v", out.Rebuild)
	}
	if len(evs) == 0 {
		t.Error("the rebuild reported no progress")
	}
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindRebuild, Adapter: &jobs.Input{Files: "adapter"}})
	unchecked(t, "a rebuild without checkpoints", out.Rebuild.Outcome, err, report.CheckInvalid, "base checkpoint")
}

// demoSite serves the world by range and the demo decision service, like
// clefcheck serve, on loopback.
func demoSite(t *testing.T) (site, server string) {
	t.Helper()
	m, err := demo.LoadServer(worldDir, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files := httptest.NewServer(http.FileServer(http.Dir(worldDir)))
	svc := httptest.NewServer((&service.Server{Model: m}).Handler())
	t.Cleanup(files.Close)
	t.Cleanup(svc.Close)
	return files.URL + "/", svc.URL
}

func TestDecisionJobs(t *testing.T) {
	site, server := demoSite(t)
	out, _, err := run(t, jobs.Spec{Kind: jobs.KindRecords, Site: &jobs.Input{URL: site}})
	if err != nil {
		t.Fatal(err)
	}
	recs, ref := out.Records, out.RefAnswers
	if len(recs) == 0 || len(ref) != len(recs) {
		t.Fatalf("%d records, %d reference answers", len(recs), len(ref))
	}
	if _, _, err := run(t, jobs.Spec{Kind: jobs.KindRecords, Site: &jobs.Input{URL: site}, Datasets: []string{"../x"}}); err == nil {
		t.Fatal("a dataset name with a path was accepted")
	}

	// A dozen records of each set are enough to compare the two ways.
	recs = append(append([]report.Record{}, recs[:6]...), recs[len(recs)-6:]...)
	var byServer, inBrowser *report.Decisions
	for _, browser := range []bool{false, true} {
		out, evs, err := run(t, jobs.Spec{Kind: jobs.KindDecisions, Records: recs, RefAnswers: ref, Server: server, Concurrency: 3, Browser: browser, Site: &jobs.Input{URL: site}})
		if err != nil {
			t.Fatal(err)
		}
		d := out.Decisions
		rows := 0
		for _, e := range evs {
			if e.Row != nil {
				rows++
			}
		}
		// The demo service and the model here are the world's own model:
		// every answer agrees with the reference.
		s := d.Summary
		if s.Agree == nil || *s.Agree != len(recs) || s.Failed != 0 || s.Answered != len(recs) || len(d.Records) != len(recs) || rows != len(recs) || s.Answers == nil || s.Latency.N != len(recs) || d.Verdict != report.VerdictPass {
			t.Fatalf("browser=%v: %s, %v of %d agree, %d failed, %d rows, %d row events, summary %+v", browser, d.Verdict, s.Agree, len(recs), s.Failed, len(d.Records), rows, s)
		}
		if browser {
			inBrowser = d
		} else {
			byServer = d
		}
	}
	for i := range byServer.Records {
		if byServer.Records[i].Choice != inBrowser.Records[i].Choice {
			t.Fatalf("record %s: server %s, browser model %s", byServer.Records[i].ID, byServer.Records[i].Choice, inBrowser.Records[i].Choice)
		}
	}

	// A dead server: every row fails, and says why.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindDecisions, Records: recs[:3], Server: dead.URL, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if d := out.Decisions; d.Summary.Failed != 3 || d.Records[0].Error == "" || d.Records[0].Status != report.Failed || d.Verdict != report.VerdictError {
		t.Fatalf("dead server: %+v", out.Decisions)
	}
	for _, f := range out.Decisions.Findings {
		if f.Severity == report.Fail {
			t.Errorf("a dead server made a failing finding: %v", f)
		}
	}

	// One decision, from the service and from the model here.
	var probs [2][]float64
	for i, browser := range []bool{false, true} {
		out, _, err := run(t, jobs.Spec{Kind: jobs.KindDecide, Prompt: recs[0].Prompt, Options: recs[0].Options, Server: server, Browser: browser, Site: &jobs.Input{URL: site}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Decided.Choice != ref[recs[0].ID].Choice {
			t.Fatalf("browser=%v: %s, reference %s", browser, out.Decided.Choice, ref[recs[0].ID].Choice)
		}
		probs[i] = out.Decided.Probs
	}
	for k := range probs[0] {
		if math.Abs(probs[0][k]-probs[1][k]) > 1e-6 {
			t.Fatalf("probabilities differ: %v vs %v", probs[0], probs[1])
		}
	}
	if _, _, err := run(t, jobs.Spec{Kind: jobs.KindDecide, Prompt: "x", Options: []string{"only"}, Server: server}); err == nil {
		t.Fatal("a request with one option was accepted")
	}
}

func TestHiddenJobs(t *testing.T) {
	site, server := demoSite(t)
	out, evs, err := run(t, jobs.Spec{Kind: jobs.KindHidden, Server: server, Site: &jobs.Input{URL: site}})
	if err != nil {
		t.Fatal(err)
	}
	h := out.Hidden
	if h == nil || h.Verdict != "pass" || h.Summary.Compared == 0 || h.Summary.Compared != h.Summary.Records || !strings.Contains(out.Note, "captured live") {
		t.Fatalf("live: %+v (%s)", h, out.Note)
	}
	if len(evs) == 0 {
		t.Error("no progress notes")
	}
	// The reference folder against itself, as two local folders.
	out, _, err = run(t, jobs.Spec{Kind: jobs.KindHidden, Ref: &jobs.Input{Files: "reference/hidden"}, Cand: &jobs.Input{Files: "reference/hidden"}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := compare.Hidden(os.DirFS(filepath.Join(worldDir, "reference/hidden")), ".", os.DirFS(filepath.Join(worldDir, "reference/hidden")), ".", compare.HiddenTol{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Hidden.Verdict != "pass" || out.Hidden.Summary.Compared != want.Summary.Compared || len(out.Hidden.Records) != len(want.Records) {
		t.Fatalf("folders: %+v, want %+v", out.Hidden.Summary, want.Summary)
	}
}

// unchecked asserts a check that could not run: no Go error, verdict error,
// a finding of the code (severity error) whose message mentions about.
func unchecked(t *testing.T, what string, o report.Outcome, err error, code report.Code, about string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: an error instead of a result: %v", what, err)
	}
	if o.Verdict != report.VerdictError || len(o.Findings) == 0 {
		t.Fatalf("%s: verdict %s, findings %v", what, o.Verdict, o.Findings)
	}
	for _, f := range o.Findings {
		if f.Code == code && f.Severity == report.Unchecked && strings.Contains(f.Message, about) {
			return
		}
	}
	t.Fatalf("%s: no %s finding about %q: %v", what, code, about, o.Findings)
}

// TestClaimsJobCheckpoints: the claims job names each profile's base and
// tuned checkpoints as Hub sources at the profile's revisions (the
// Reconstruct page's "the card's checkpoints").
func TestClaimsJobCheckpoints(t *testing.T) {
	out, _, err := run(t, jobs.Spec{Kind: jobs.KindClaims})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"clef-lora-r256": {"Qwen/Qwen3.8-27B@1d4bf0f2ff6012fd82039f2fa52739d0dd7c60c0", "Cloudflare/clef@2f3de3dd85f379784083b0814d997ab627200f0c"},
		"demo":           {"clefcheck/demo-base@world-1", "clefcheck/demo-clef@world-1"},
	}
	for _, p := range out.Profiles {
		if w, ok := want[p.Name]; ok {
			if p.Base != w[0] || p.Tuned != w[1] {
				t.Errorf("%s: base %q, tuned %q; want %q, %q", p.Name, p.Base, p.Tuned, w[0], w[1])
			}
			delete(want, p.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("profiles not listed: %v", want)
	}
	if refSource(claimsRef("", "x")) != "" || refSource(claimsRef("o/n", "")) != "o/n" {
		t.Error("refSource of an empty repository or revision")
	}
}

func claimsRef(repo, rev string) claims.Ref { return claims.Ref{Repo: repo, Revision: rev} }

// TestCancelStopsReads: cancelling a job stops the reads of the sources it
// opened from URLs (their context is the job's), here a server that never
// answers: the job ends at once, not after its reads' retries, and the
// server sees the request given up.
func TestCancelStopsReads(t *testing.T) {
	var gone atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		gone.Add(1)
	}))
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := Run(ctx, &jobs.Spec{Kind: jobs.KindRecords, Site: &jobs.Input{URL: hs.URL + "/"}}, host(), nil)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled job: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled job took %v to end", d)
	}
	deadline := time.Now().Add(2 * time.Second)
	for gone.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if gone.Load() == 0 {
		t.Error("the server never saw the request given up")
	}
	// A file's URL, opened as the jobs open it (OpenURL: that file alone),
	// and a Hub-like folder URL: their reads stop with the job too.
	for _, u := range []string{hs.URL + "/records/arc.jsonl", hs.URL + "/folder/"} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		fsys, err := open(Host{Open: func(in *jobs.Input) (fs.FS, error) { return OpenURL(in) }, ctx: ctx}, &jobs.Input{URL: u}, "records")
		if err == nil {
			_, err = fs.ReadFile(fsys, "arc.jsonl")
		}
		if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
			t.Errorf("%s, cancelled after 300 ms: %v after %v", u, err, time.Since(start))
		}
	}
}
