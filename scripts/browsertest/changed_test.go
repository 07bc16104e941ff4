//go:build browser

package browsertest

import (
	"bytes"
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

	"github.com/chromedp/chromedp"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// TestBrowserPickedFileChanges: a picked file that changes on disk while
// it is audited (a download finishing over it, an editor saving) can no
// longer be read: Chromium refuses every read of the File after that. The
// audit must end in ERROR (the file could not be checked), naming the
// file and telling the user to pick it again — never FAIL, which would
// speak about an artifact that was not read, and never a hang. The exact
// deep audit of the 4-layer twin (233 MB, in the pool's workers, with the
// files' SHA-256) is under way when the file's modification time moves:
// as it starts, and a tenth of the way in.
func TestBrowserPickedFileChanges(t *testing.T) {
	dir := t.TempDir()
	if _, err := world.FullLayers(dir, 1, 4); err != nil {
		t.Fatal(err)
	}
	ad := filepath.Join(dir, world.AdapterDir)
	model := filepath.Join(ad, "adapter_model.safetensors")
	p := newTab(t, 4*time.Minute)
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.run(`(() => { const e = document.querySelector("#claims"); e.selectedIndex = [...e.options].findIndex(o => o.text === "(none)"); e.dispatchEvent(new Event("change")) })()`)
	p.do("choosing the mode", chromedp.SetValue("#mode", "exact"))
	p.run(`document.querySelector("#mode").dispatchEvent(new Event("change"))`)
	// Before any byte is read (the file changes as the audit starts), and
	// mid-feed (a tenth of the bytes checked: the pool's spans, the
	// digest's reads and the workers' own all meet the change).
	for i, c := range []struct{ when, ready string }{
		{"as the audit starts", `!!document.querySelector("#progress")`},
		{"mid-audit", `(() => { const b = document.querySelector("#progress progress"); return !!b && b.value >= 0.1 && b.value < 0.8 })()`},
	} {
		p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
		p.run(`document.querySelector("#adapter-files").value = ""`) // the same files again
		p.upload("#adapter-files", filepath.Join(ad, "adapter_config.json"), model, filepath.Join(ad, "extraction-report.json"))
		if err := p.waitJS("the audit's progress ("+c.when+")", c.ready, time.Minute); err != nil {
			p.shot("picked-file-changed")
			t.Fatalf("%v: %s", err, clip(p.text("main"), 600))
		}
		later := time.Now().Add(time.Duration(i+1) * time.Hour)
		if err := os.Chtimes(model, later, later); err != nil {
			t.Fatal(err)
		}
		changed := time.Now()
		v, err := p.waitText("#verdict", "", 3*time.Minute)
		if err != nil {
			p.shot("picked-file-changed")
			t.Fatalf("%s: no verdict after the file changed: %v: %s", c.when, err, clip(p.text("main"), 1500))
		}
		t.Logf("%s: verdict %q %v after the change", c.when, v, time.Since(changed).Round(time.Millisecond))
		if i == 1 {
			p.shot("picked-file-changed")
		}
		a := downloadedAudit(t, p)
		var msgs []string
		changedFinding := false
		for _, f := range a.Findings {
			msgs = append(msgs, f.Code+": "+f.Message)
			if f.Code == "input.changed" && strings.Contains(f.Message, "adapter_model.safetensors") && strings.Contains(f.Message, "pick it again") {
				changedFinding = true
			}
			if f.Code == "file.unreadable" || f.Code == "header.invalid" || f.Code == "file.digest" {
				t.Errorf("%s: a finding about the artifact, which was not read whole: %s: %s", c.when, f.Code, f.Message)
			}
		}
		t.Logf("%s: findings:\n%s", c.when, strings.Join(msgs, "\n"))
		if !strings.Contains(v, "ERROR") {
			t.Errorf("a picked file that changed %s: verdict %q, want ERROR", c.when, v)
		}
		if !changedFinding {
			t.Errorf("%s: no input.changed finding naming the file and telling the user to pick it again", c.when)
		}
	}
}

// TestBrowserURLChanges: a URL whose file is replaced while the page
// audits it (a branch moved to a new upload) ends in ERROR with
// input.changed and the hint to audit a commit URL — not FAIL on a mix of
// two files' bytes. Both of the page's read paths meet it: a host with a
// strong ETag (the cache keeps its bytes: the reads go through the engine
// worker's source), where the replaced file has the same size and a new
// ETag; and a host with no ETag (the pool's spans are fetched straight
// into its buffers), where the replaced file is longer.
func TestBrowserURLChanges(t *testing.T) {
	dir := t.TempDir()
	if _, err := world.FullLayers(dir, 1, 4); err != nil {
		t.Fatal(err)
	}
	ad := filepath.Join(dir, world.AdapterDir)
	const weights = "adapter_model.safetensors"
	orig, err := os.ReadFile(filepath.Join(ad, weights))
	if err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(orig)
	flipped[len(flipped)-100] ^= 0x40
	grown := append(bytes.Clone(orig), make([]byte, 1<<20)...)
	// The weights are replaced after their after-th request (set per case).
	var after, reads atomic.Int32
	var etagBefore, etagAfter atomic.Value
	var replaced atomic.Pointer[[]byte]
	files := http.FileServer(http.Dir(dir))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Another origin than the page's, as a host is.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Header().Set("Access-Control-Allow-Headers", "Range")
		w.Header().Set("Access-Control-Expose-Headers", "Content-Range, Content-Length, ETag")
		if r.Method == http.MethodOptions {
			return
		}
		if path.Base(r.URL.Path) != weights {
			files.ServeHTTP(w, r)
			return
		}
		body, etag := orig, etagBefore.Load().(string)
		if reads.Add(1) > after.Load() {
			body, etag = *replaced.Load(), etagAfter.Load().(string)
		}
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		http.ServeContent(w, r, weights, time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(hs.Close)
	p := newTab(t, 4*time.Minute)
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.run(`(() => { const e = document.querySelector("#claims"); e.selectedIndex = [...e.options].findIndex(o => o.text === "(none)"); e.dispatchEvent(new Event("change")) })()`)
	p.choose("#mode", "randomized")
	audit := func(name string) string {
		t.Helper()
		p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
		p.choose("#adapter-url", hs.URL+"/"+world.AdapterDir+"/")
		p.click("#open-url")
		v, err := p.waitText("#verdict", "", 3*time.Minute)
		if err != nil {
			p.shot("url-changed")
			t.Fatalf("%s: no verdict: %v: %s", name, err, clip(p.text("main"), 1500))
		}
		return v
	}
	// Each audit's ETags are its own (the cache keeps bytes under a strong
	// one: a later audit under the same would read them from there).
	serial := 0
	tag := func(v string) string {
		if v == "" {
			return ""
		}
		serial++
		return fmt.Sprintf(`"%s-%d"`, v, serial)
	}
	type change struct {
		name, etag, says string
		body             []byte
		after            int32
	}
	var cases []change
	for _, c := range []change{
		{"strong ETag, same size", "v", "ETag went from", flipped, 0},
		{"no ETag, longer", "", "size went from", grown, 0},
	} {
		// How many requests an audit makes for the weights, unchanged:
		// a change comes as the pool opens them, and with the last spans.
		etagBefore.Store(tag(c.etag))
		reads.Store(0)
		after.Store(1 << 30)
		if v := audit(c.name + ", unchanged"); !strings.Contains(v, "PASS") {
			t.Fatalf("%s, unchanged: verdict %q", c.name, v)
		}
		total := reads.Load()
		for _, n := range []int32{6, total - 3} {
			d := c
			d.after, d.name = n, fmt.Sprintf("%s, after %d of %d requests", c.name, n, total)
			cases = append(cases, d)
		}
	}
	for _, c := range cases {
		etagBefore.Store(tag(c.etag))
		etagAfter.Store(tag(c.etag))
		replaced.Store(&c.body)
		reads.Store(0)
		after.Store(c.after)
		v := audit(c.name)
		if n := reads.Load(); n <= after.Load() {
			t.Fatalf("%s: the weights took %d requests: the change was never served", c.name, n)
		}
		a := downloadedAudit(t, p)
		var msgs []string
		seen := false
		for _, f := range a.Findings {
			msgs = append(msgs, f.Code+": "+clip(f.Message, 300))
			if f.Code == "input.changed" && strings.Contains(f.Message, c.says) && strings.Contains(f.Message, "commit URL") {
				seen = true
			}
			if f.Severity == "fail" {
				t.Errorf("%s: a failure from bytes of two files: %s: %s", c.name, f.Code, f.Message)
			}
		}
		t.Logf("%s: verdict %q after %d requests for the weights; %d findings, the first: %s", c.name, v, reads.Load(), len(a.Findings), msgs[0])
		if !strings.Contains(v, "ERROR") || !seen {
			t.Errorf("%s: verdict %q, want ERROR with input.changed saying %q: %s", c.name, v, c.says, strings.Join(msgs, "\n"))
		}
		// One cause: one entry for the pairs (however many reads it
		// stopped), at most one more for the files' SHA-256.
		if why := p.text("#could-not"); strings.Count(why, "input.changed") > 2 {
			t.Errorf("%s: the card names input.changed %d times, want one entry for the pairs and one for the digest at most: %s", c.name, strings.Count(why, "input.changed"), clip(why, 800))
		}
		p.shot("url-changed")
	}
	// Run again once the URL is stable (here: the original bytes under a
	// new strong ETag): nothing of the audits before is held against it.
	etagBefore.Store(`"v3"`)
	after.Store(1 << 30)
	if v := audit("stable again"); !strings.Contains(v, "PASS") {
		t.Errorf("the same URL, stable again: verdict %q, want PASS: %s", v, clip(p.text("#could-not"), 800))
	}
}
