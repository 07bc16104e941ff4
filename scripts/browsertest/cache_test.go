//go:build browser

package browsertest

// Bytes fetched once: the demo world's adapter audited from a URL twice in
// the page, the second time from the browser's cache (the Origin Private
// File System, written by the engine worker, read by it and by the pool
// workers), counted at the server; cleared, it is fetched again. A URL
// whose server sends no ETag is never kept.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// demoCommit is the commit the cache test's server pretends to serve.
const demoCommit = "0c1e2f3a4b5c6d7e8f901a2b3c4d5e6f7a8b9c0d"

// countingServer serves dir on another origin as three kinds of URL: at a
// commit (/org/demo/resolve/{commit}/…, no ETag needed), plain with a
// strong ETag (/etag/…), and plain with none (/bare/…); it counts the
// requests for files by kind.
type countingServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs map[string]int
}

// crossOrigin answers CORS for a file server on another origin, as the
// Hub's: true when r was the preflight, answered.
func crossOrigin(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Access-Control-Expose-Headers", "Content-Range, Content-Length, Accept-Ranges, ETag")
	if r.Method != http.MethodOptions {
		return false
	}
	w.Header().Set("Access-Control-Allow-Headers", "Range")
	w.WriteHeader(204)
	return true
}

func newCountingServer(dir string) *countingServer {
	s := &countingServer{reqs: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossOrigin(w, r) {
			return
		}
		kind, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if kind == "org" {
			kind, rest = "commit", strings.TrimPrefix(r.URL.Path, "/org/demo/resolve/"+demoCommit+"/")
		}
		p := filepath.Join(dir, filepath.FromSlash(rest))
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || strings.Contains(rest, "..") {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		s.reqs[kind]++
		s.mu.Unlock()
		// Keep Chromium's own HTTP cache out of the count: it keeps ranges
		// that came with an ETag (and answers the probes), and those with a
		// Last-Modified for a tenth of their age (the bare URLs' second
		// audit then reached no server once the world was minutes old).
		w.Header().Set("Cache-Control", "no-store")
		if kind == "etag" {
			w.Header().Set("ETag", fmt.Sprintf(`"%x-%x"`, st.ModTime().UnixNano(), st.Size()))
		}
		http.ServeFile(w, r, p)
	}))
	return s
}

func (s *countingServer) count(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs[kind]
}

// TestBrowserCache audits the demo world's adapter from a URL at a commit
// twice: the second audit makes (almost) no request, with the same
// verdict, and says how much the cache served; after the cache is cleared
// the server is asked again. With an ETag only the probes (which validate
// it) go out the second time; with none, everything does.
func TestBrowserCache(t *testing.T) {
	p := newTab(t, 6*time.Minute)
	srv := newCountingServer(p.env.world)
	defer srv.Close()
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	if s, err := p.waitText("#cache-size", "held", 30*time.Second); err != nil {
		t.Fatalf("the cache bar: %q %v", s, err)
	}
	audit := func(run, url string) (verdict, kernel string) {
		t.Helper()
		return cachedAudit(t, p, run, url)
	}
	base := srv.URL + "/org/demo/resolve/" + demoCommit + "/adapter/"
	v1, k1 := audit("first", base)
	n1 := srv.count("commit")
	// The entries were written by the cache's writer, a worker of its own,
	// not on the engine worker's thread (which deals the audit's spans).
	if !wroteBy.MatchString(k1) || !strings.Contains(k1, "by its writer (cachewrite.js)") {
		t.Errorf("the first audit does not say its writer wrote the cache: %q", k1)
	}
	v2, k2 := audit("second", base)
	n2 := srv.count("commit") - n1
	t.Logf("at a commit: the first audit made %d requests, the second %d (%s)", n1, n2, k2)
	if n1 == 0 || n2 > 2 || v2 != v1 || !strings.Contains(k2, "read from the browser's cache") {
		t.Errorf("the second audit: %d requests (the first %d), verdict %q (first %q), kernel %q", n2, n1, v2, v1, k2)
	}
	if s, err := p.waitText("#cache-size", "ranges", 10*time.Second); err != nil || strings.Contains(s, "0 B") {
		t.Errorf("the cache bar after two audits: %q %v", s, err)
	}
	p.click("#cache-clear")
	if s, err := p.waitText("#cache-size", "(0 ranges)", 30*time.Second); err != nil {
		t.Fatalf("clear: %q %v", s, err)
	}
	audit("cleared", base)
	if n3 := srv.count("commit") - n1 - n2; n3 < n1/2 {
		t.Errorf("after clearing, the audit made %d requests (the first %d)", n3, n1)
	}

	// An ETag: the second audit sends only the probes (one per file opened
	// in each worker), which validate it, and reads the adapter's bytes
	// from the cache. No ETag: nothing is kept, nothing read from it. (The
	// requests are logged, not compared: how many a first audit makes
	// depends on who read each span, the dealer or a worker.)
	_, ke1 := audit("etag-1", srv.URL+"/etag/adapter/")
	e1 := srv.count("etag")
	_, ke2 := audit("etag-2", srv.URL+"/etag/adapter/")
	e2 := srv.count("etag") - e1
	_, kb1 := audit("bare-1", srv.URL+"/bare/adapter/")
	b1 := srv.count("bare")
	_, kb2 := audit("bare-2", srv.URL+"/bare/adapter/")
	b2 := srv.count("bare") - b1
	t.Logf("with an ETag: %d then %d requests; with none: %d then %d", e1, e2, b1, b2)
	if !wroteBy.MatchString(ke1) || !regexp.MustCompile(`[\d.]+ MB read from the browser's cache`).MatchString(ke2) {
		t.Errorf("with an ETag the first audit should keep the adapter's bytes and the second read them from the cache: %q, then %q", ke1, ke2)
	}
	if strings.Contains(kb1+kb2, "browser's cache") || b1 == 0 || b2 == 0 {
		t.Errorf("with no ETag nothing should be kept: %d then %d requests; %q, then %q", b1, b2, kb1, kb2)
	}
	p.shot("cache")
}

// wroteBy is the summary's note of what the audit wrote to the cache.
var wroteBy = regexp.MustCompile(`[\d.]+ [kMG]?B written to the browser's cache by `)

// cachedAudit audits url on p's Audit page (randomized, the demo claims)
// and returns its verdict, PASS, and its summary's kernel line.
func cachedAudit(t *testing.T, p *tab, run, url string) (verdict, kernel string) {
	t.Helper()
	p.do("choosing the claims, mode and URL",
		chromedp.SetValue("#claims", "demo"), chromedp.SetValue("#mode", "randomized"), chromedp.SetValue("#adapter-url", url))
	p.run(`["#claims","#mode","#adapter-url"].forEach(s => document.querySelector(s).dispatchEvent(new Event("change")))`)
	p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
	p.click("#open-url")
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		p.shot("cache-" + run)
		t.Fatalf("%s audit: %v", run, err)
	}
	if err := p.waitJS("the summary", `!!document.querySelector("#kernel")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return p.text("#verdict"), p.text("#kernel")
}

// TestBrowserCacheNoWriter: a site whose cache writer (cachewrite.js) is
// missing still keeps the ranges read, written by the engine worker
// itself, and says so; the second audit reads them from the cache.
func TestBrowserCacheNoWriter(t *testing.T) {
	srv := newCountingServer(harness(t).world)
	defer srv.Close()
	hs := staticSite(t, "", func(site string) error { return os.Remove(filepath.Join(site, "web", "cachewrite.js")) })
	p := newTab(t, 4*time.Minute)
	p.open(hs.URL+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	base := srv.URL + "/org/demo/resolve/" + demoCommit + "/adapter/"
	v1, k1 := cachedAudit(t, p, "nowriter-1", base)
	n1 := srv.count("commit")
	v2, k2 := cachedAudit(t, p, "nowriter-2", base)
	n2 := srv.count("commit") - n1
	t.Logf("no cache writer: %d then %d requests (%s)", n1, n2, k1)
	if !wroteBy.MatchString(k1) || !strings.Contains(k1, "by the engine worker") {
		t.Errorf("the first audit does not say the engine worker wrote the cache: %q", k1)
	}
	if n1 == 0 || n2 > 2 || v2 != v1 || !strings.Contains(k2, "read from the browser's cache") {
		t.Errorf("the second audit: %d requests (the first %d), verdict %q (first %q), kernel %q", n2, n1, v2, v1, k2)
	}
}

// pageReport is the audit the page offers for download (#download-json),
// caught on its way to the download.
func pageReport(t testing.TB, p *tab) []byte {
	t.Helper()
	p.run(`window.__dl = null; if (!window.__dlHooked) { window.__dlHooked = true; const orig = URL.createObjectURL;
		URL.createObjectURL = (b) => { window.__dl = b; return orig.call(URL, b); }; }`)
	p.click("#download-json")
	s, err := eval[string](p, `(async () => { for (let i = 0; i < 50 && !window.__dl; i++) await new Promise(r => setTimeout(r, 100));
		return window.__dl ? await window.__dl.text() : "" })()`, chromedp.EvalAwaitPromise)
	if err != nil || s == "" {
		t.Fatalf("the page's JSON report: %v", err)
	}
	return []byte(s)
}

// TestBrowserDigests: the page's audit of the demo world from a URL names
// each file with the SHA-256 the CLI computes for it, read again almost
// nothing for them (the dealer's spans were hashed as they passed, in file
// order), and says what they cost; so does its audit of the same files
// picked, which the digest worker hashes reading them itself; with the box
// ticked, none are computed.
func TestBrowserDigests(t *testing.T) {
	p := newTab(t, 4*time.Minute)
	srv := newCountingServer(p.env.world)
	defer srv.Close()
	type audit struct {
		Verdict string `json:"verdict"`
		Summary struct {
			Kernel string `json:"kernel"`
		} `json:"summary"`
		Provenance struct {
			Files []struct {
				Name   string `json:"name"`
				Size   int64  `json:"size"`
				SHA256 string `json:"sha256"`
			} `json:"files"`
			Digests struct {
				Computed bool    `json:"computed"`
				Why      string  `json:"why"`
				Bytes    int64   `json:"bytes"`
				Reread   int64   `json:"reread"`
				Seconds  float64 `json:"seconds"`
			} `json:"digests"`
		} `json:"provenance"`
	}
	var cli audit
	jsonOf(t, p.env.clefcheck(t, "audit", "--json", "--claims", "demo", filepath.Join(p.env.world, "adapter")), &cli)
	want := map[string]string{}
	for _, f := range cli.Provenance.Files {
		want[f.Name] = f.SHA256
	}
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	run := func(what string) audit {
		t.Helper()
		p.do("choosing the claims, mode and URL", chromedp.SetValue("#claims", "demo"), chromedp.SetValue("#mode", "randomized"),
			chromedp.SetValue("#adapter-url", srv.URL+"/org/demo/resolve/"+demoCommit+"/adapter/"))
		p.run(`["#claims","#mode","#adapter-url"].forEach(s => document.querySelector(s).dispatchEvent(new Event("change")))`)
		p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
		p.click("#open-url")
		if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if err := p.waitJS("the download button", `!!document.querySelector("#download-json")`, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		var a audit
		jsonOf(t, pageReport(t, p), &a)
		return a
	}
	a := run("the audit")
	d := a.Provenance.Digests
	t.Logf("page: %d files, digests: %d bytes hashed, %d read again, %.3f s", len(a.Provenance.Files), d.Bytes, d.Reread, d.Seconds)
	if !d.Computed || len(a.Provenance.Files) != len(want) || len(want) == 0 {
		t.Fatalf("page digests %+v, files %+v; the CLI's %v", d, a.Provenance.Files, want)
	}
	for _, f := range a.Provenance.Files {
		if f.SHA256 != want[f.Name] {
			t.Errorf("%s: the page's SHA-256 %s, the CLI's %s", f.Name, f.SHA256, want[f.Name])
		}
	}
	if d.Reread*10 > d.Bytes {
		t.Errorf("the page read %d of %d bytes again for the digests", d.Reread, d.Bytes)
	}
	// The digests above, equal to the CLI's, came from the digest worker
	// (public/digest.js), not from the engine worker's own thread.
	if !strings.Contains(a.Summary.Kernel, "SHA-256: wasm, in a worker of its own") {
		t.Errorf("the SHA-256 was not computed by the digest worker: %q", a.Summary.Kernel)
	}
	// The same files, picked: the digest worker reads them itself.
	p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
	ad := filepath.Join(p.env.world, "adapter")
	p.upload("#adapter-files", filepath.Join(ad, "adapter_config.json"), filepath.Join(ad, "adapter_model.safetensors"), filepath.Join(ad, "extraction-report.json"))
	if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
		t.Fatalf("the picked files: %v", err)
	}
	if err := p.waitJS("the download button", `!!document.querySelector("#download-json")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var local audit
	jsonOf(t, pageReport(t, p), &local)
	if d := local.Provenance.Digests; !d.Computed || d.Reread != 0 || d.Seconds <= 0 || len(local.Provenance.Files) != len(want) {
		t.Fatalf("picked files: digests %+v, files %+v; the CLI's %v", d, local.Provenance.Files, want)
	}
	for _, f := range local.Provenance.Files {
		if f.SHA256 != want[f.Name] {
			t.Errorf("picked %s: the page's SHA-256 %s, the CLI's %s", f.Name, f.SHA256, want[f.Name])
		}
	}
	// The safetensors file hashed from the spans the pool's dealer read
	// (read once, but for its header, its tail, and what the digest read
	// itself while the pool's workers started: at most a quarter);
	// the two small files, which no span covers, read whole by the digest
	// worker's file reader, a thread of its own.
	if !strings.Contains(local.Summary.Kernel, "in a worker of its own (digest.js), 1 picked file hashed from the pool's spans") ||
		!strings.Contains(local.Summary.Kernel, "2 picked files read beside it (digestread.js)") {
		t.Errorf("the picked files were not hashed from the pool's spans and by the digest worker's reader: %q", local.Summary.Kernel)
	}
	if spans, alone, ok := fedBytes(local.Summary.Kernel); !ok || spans < 600e3 || alone*2 > spans {
		t.Errorf("the safetensors file: %.0f bytes hashed from the spans, %.0f read for the digest alone (%v): %q", spans, alone, ok, local.Summary.Kernel)
	}
	p.shot("digests-picked")
	// A fresh page for the last audit: this one's picked files are its
	// source now, and a second audit of them may still be under way (Open
	// is disabled while an audit runs).
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	p.click("#no-digest")
	a = run("the audit with no digests")
	if d := a.Provenance.Digests; d.Computed || !strings.Contains(d.Why, "switched off") {
		t.Errorf("with the box ticked: %+v", d)
	}
	p.shot("digests")
}

// downloadedAudit is the page's last audit report, once it can be
// downloaded.
func downloadedAudit(t testing.TB, p *tab) pageAudit {
	t.Helper()
	if err := p.waitJS("the download button", `!!document.querySelector("#download-json")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var a pageAudit
	jsonOf(t, pageReport(t, p), &a)
	return a
}

// fedBytes reads the bytes a note says were hashed from the pool's spans
// and read for the digest alone ("… hashed from the pool's spans (1.1 MB
// of them; 54.4 kB read for the digest alone)").
func fedBytes(note string) (spans, alone float64, ok bool) {
	m := regexp.MustCompile(`hashed from the pool's spans \(([0-9.]+) (B|kB|MB|GB) of them; ([0-9.]+) (B|kB|MB|GB) read for the digest alone\)`).FindStringSubmatch(note)
	if m == nil {
		return 0, 0, false
	}
	unit := map[string]float64{"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}
	var a, b float64
	fmt.Sscan(m[1], &a)
	fmt.Sscan(m[3], &b)
	return a * unit[m[2]], b * unit[m[4]], true
}

// TestBrowserDigestNoReader: where the digest worker's file reader
// (public/digestread.js) is missing, or fails on the first file it is
// given, the digest worker reads the picked files no span covers itself
// (from their start), says so, and its digests are the CLI's.
func TestBrowserDigestNoReader(t *testing.T) {
	e := harness(t)
	ad := filepath.Join(e.world, "adapter")
	var cli struct {
		Provenance struct {
			Files []struct{ Name, SHA256 string } `json:"files"`
		} `json:"provenance"`
	}
	jsonOf(t, e.clefcheck(t, "audit", "--json", "--claims", "demo", ad), &cli)
	reader := func(site string) string { return filepath.Join(site, "web", "digestread.js") }
	for _, c := range []struct {
		name string
		edit func(site string) error
	}{
		{"missing", func(site string) error { return os.Remove(reader(site)) }},
		{"failing", func(site string) error {
			b, err := os.ReadFile(reader(site))
			const find = "readFile(m.id, m.file, m.chunk, m.ahead);"
			if err == nil && !strings.Contains(string(b), find) {
				err = fmt.Errorf("digestread.js no longer holds %q", find)
			}
			if err != nil {
				return err
			}
			return os.WriteFile(reader(site), []byte(strings.Replace(string(b), find, `throw new Error("spoilt for the test");`, 1)), 0o644)
		}},
	} {
		hs := staticSite(t, "", c.edit)
		p := newTab(t, tabLimit)
		p.open(hs.URL+"/", "#load-demo")
		if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
			t.Fatal(err)
		}
		p.choose("#claims", "demo")
		p.upload("#adapter-files", filepath.Join(ad, "adapter_config.json"), filepath.Join(ad, "adapter_model.safetensors"), filepath.Join(ad, "extraction-report.json"))
		if _, err := p.waitText("#verdict", "PASS", 2*time.Minute); err != nil {
			p.shot("digests-reader-" + c.name)
			t.Fatalf("%s file reader: %v", c.name, err)
		}
		r := downloadedAudit(t, p)
		if !strings.Contains(r.Summary.Kernel, "in a worker of its own (digest.js), 1 picked file hashed from the pool's spans") ||
			!strings.Contains(r.Summary.Kernel, "2 picked files read there") {
			t.Errorf("%s file reader: the digest worker should read the picked files itself: %q", c.name, r.Summary.Kernel)
		}
		if len(r.Provenance.Files) != len(cli.Provenance.Files) || len(r.Provenance.Files) == 0 {
			t.Fatalf("%s file reader: %d file digests, the CLI has %d", c.name, len(r.Provenance.Files), len(cli.Provenance.Files))
		}
		for i, f := range r.Provenance.Files {
			if w := cli.Provenance.Files[i]; f.Name != w.Name || f.SHA256 != w.SHA256 {
				t.Errorf("%s file reader: %s: the page's SHA-256 %s; the CLI's %s: %s", c.name, f.Name, f.SHA256, w.Name, w.SHA256)
			}
		}
	}
}

// TestBrowserDigestWorkerSpoilt: the digest worker (public/digest.js) is
// used only once its SHA-256 agrees with crypto/sha256, and a worker that
// fails mid-audit gives no digest, never a wrong one. On a static site
// whose digest.js is spoilt:
//   - wrong: every digest it answers has its last byte flipped — the check
//     refuses it, the engine worker hashes on its own thread, and the
//     digests are the CLI's;
//   - failing: right during the check, then an error for every byte of the
//     audit — the audit ends in ERROR saying the SHA-256 could not be
//     computed, with no file digest in its report.
func TestBrowserDigestWorkerSpoilt(t *testing.T) {
	type report = pageAudit
	e := harness(t)
	var cli report
	jsonOf(t, e.clefcheck(t, "audit", "--json", "--claims", "demo", filepath.Join(e.world, "adapter")), &cli)
	want := map[string]string{}
	for _, f := range cli.Provenance.Files {
		want[f.Name] = f.SHA256
	}
	spoil := func(find, replace string) func(string) error {
		return func(site string) error {
			p := filepath.Join(site, "web", "digest.js")
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if !strings.Contains(string(b), find) {
				return fmt.Errorf("digest.js no longer holds %q", find)
			}
			return os.WriteFile(p, []byte(strings.Replace(string(b), find, replace, 1)), 0o644)
		}
	}
	audit := func(name string, hs *httptest.Server, verdict string) report {
		t.Helper()
		p := newTab(t, tabLimit)
		p.open(hs.URL+"/", "#load-demo")
		p.click("#load-demo")
		if _, err := p.waitText("#verdict", verdict, 2*time.Minute); err != nil {
			p.shot("digest-worker-" + name)
			t.Fatalf("%s: %v", name, err)
		}
		if err := p.waitJS("the download button", `!!document.querySelector("#download-json")`, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		p.shot("digest-worker-" + name)
		var r report
		jsonOf(t, pageReport(t, p), &r)
		return r
	}

	wrong := staticSite(t, "", spoil("  return out;", "  out[31] ^= 1;\n  return out;")) // sum()'s last line
	r := audit("wrong", wrong, "PASS")
	if !strings.Contains(r.Summary.Kernel, "SHA-256: wasm-simd") {
		t.Errorf("wrong: a digest worker whose digests are wrong was used, or no SHA-256 named: %q", r.Summary.Kernel)
	}
	if len(r.Provenance.Files) != len(want) {
		t.Errorf("wrong: %d file digests, the CLI has %d", len(r.Provenance.Files), len(want))
	}
	for _, f := range r.Provenance.Files {
		if f.SHA256 != want[f.Name] {
			t.Errorf("wrong: %s: the page's SHA-256 %s, the CLI's %s", f.Name, f.SHA256, want[f.Name])
		}
	}

	// Once the check's hashes are dropped, every byte is refused.
	failing := staticSite(t, "", spoil("if (m.drop) {", "if (m.buf && self.dropped) throw new Error(\"spoilt for the test\");\n    if (m.drop) {\n      self.dropped = true;"))
	r = audit("failing", failing, "ERROR")
	found := false
	for _, f := range r.Findings {
		found = found || (strings.Contains(f.Message, "SHA-256 could not be computed") && strings.Contains(f.Message, "skip the files' SHA-256"))
	}
	if !found || r.Verdict != "error" {
		t.Errorf("failing: verdict %s, findings %+v (want the SHA-256 that could not be computed, and how to audit without it)", r.Verdict, r.Findings)
	}
	for _, f := range r.Provenance.Files {
		if f.SHA256 != "" {
			t.Errorf("failing: %s has a SHA-256 (%s) though the digest worker failed", f.Name, f.SHA256)
		}
	}
}
