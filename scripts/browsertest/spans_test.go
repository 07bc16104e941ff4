//go:build browser

package browsertest

// The dealer's span reads of one URL, many at once: each range is asked
// for once, none is cut off and sent again.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// rangeLog is a server's record of the ranges asked for one file: each
// Range header with how many times it came, and the requests that ended
// before their body was sent (cancelled by the browser).
type rangeLog struct {
	mu        sync.Mutex
	ranges    map[string]int
	cut       []string
	bytesSent int64
}

func (l *rangeLog) note(rng string, sent int64, cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ranges[rng]++
	l.bytesSent += sent
	if cut {
		l.cut = append(l.cut, rng)
	}
}

// countingWriter counts the body bytes written.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// TestBrowserSpanReadsOnce: a 4-layer twin of the real adapter (about
// 230 MB: 31 pairs, several 32 MB spans read at once) served as a CDN
// serves it — cacheable, with an ETag — through a link of 150 MB/s, audited
// from its URL with the files' SHA-256 (the spans then go through the
// engine worker's source, clefcheckFetch) and without (the dealer's own
// BYOB reads, clefcheckFetchRange). Chromium's HTTP cache serialises
// concurrent ranges of one cacheable URL and cut off and re-sent some of
// them (a session's log showed 88 requests for the full twin where 66 were
// needed); the reads skip it (cache: "no-store"). The server's log must
// show every span of the safetensors file (its ranges of more than 1 MiB)
// asked for once, no request cut off, and about the file's bytes sent in
// all. The third audit's host is a plain static one (no ETag, no
// Cache-Control: the browser's cache keeps nothing of it), with the
// SHA-256: the digest worker hashes the spans the dealer fetched for the
// pool (the URL's feed), the file still crosses the link once, and its
// digest is the file's. Last, the same files picked, without the SHA-256
// (spans sent to the pool workers in pieces): every matrix's figures are
// those of the audit from the URL.
func TestBrowserSpanReadsOnce(t *testing.T) {
	dir := t.TempDir()
	if _, err := world.FullLayers(dir, 1, 4); err != nil {
		t.Fatal(err)
	}
	ad := filepath.Join(dir, world.AdapterDir)
	st, err := os.Stat(filepath.Join(ad, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	if size < 6*32<<20 {
		t.Fatalf("the 4-layer twin is %d bytes: too small for spans read at once", size)
	}
	link := &linkRate{bytesPerSec: 150e6}
	var mu sync.Mutex
	var log *rangeLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if crossOrigin(w, r) {
			return
		}
		// /RUN/adapter/NAME: each audit its own URL, so that none reads
		// the ranges the one before kept in the browser's cache.
		run, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/adapter/")
		if name == "" || strings.ContainsAny(name, "/\\") {
			http.NotFound(w, r)
			return
		}
		if !strings.HasPrefix(run, "plain-") {
			// As the Hub's CDN answers a file at a commit: cacheable for long.
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
			w.Header().Set("ETag", fmt.Sprintf(`"%s-%d"`, name, size))
		}
		cw := &countingWriter{ResponseWriter: w}
		http.ServeFile(&throttled{ResponseWriter: cw, link: link}, r, filepath.Join(ad, name))
		if name == "adapter_model.safetensors" {
			mu.Lock()
			l := log
			mu.Unlock()
			l.note(r.Header.Get("Range"), cw.n, r.Context().Err() != nil)
		}
	}))
	defer srv.Close()

	p := newTab(t, 4*time.Minute)
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The matrices' figures of the cdn-digest audit, whose spans go whole
	// to the pool workers (the digest worker hashes them as they pass),
	// and of cdn-nodigest (through the engine worker's cache) and
	// plain-nodigest (fetched straight into buffers), whose spans go in
	// pieces of 4 MiB (msg.Piece), which the pool workers put back
	// together.
	var whole, fromURL, fromPlain map[string]string
	for _, c := range []struct {
		run    string
		digest bool
	}{{"cdn-digest", true}, {"cdn-nodigest", false}, {"plain-digest", true}, {"plain-nodigest", false}} {
		digest := c.digest
		what := map[bool]string{true: "with the files' SHA-256", false: "without the files' SHA-256"}[digest] + " (" + c.run + ")"
		l := &rangeLog{ranges: map[string]int{}}
		mu.Lock()
		log = l
		mu.Unlock()
		// No claims, "(none)" chosen as a user does (by its text: go-app
		// writes no value attribute for an empty one, and "(none)" was
		// once sent as a profile's name): the report's pairs are the
		// expectations (the 4-layer twin has only some of the real
		// adapter's).
		p.run(`(() => { const e = document.querySelector("#claims"); e.selectedIndex = [...e.options].findIndex(o => o.text === "(none)"); e.dispatchEvent(new Event("change")) })()`)
		p.do("choosing the mode and URL", chromedp.SetValue("#mode", "quick"), chromedp.SetValue("#adapter-url", fmt.Sprintf("%s/%s/adapter/", srv.URL, c.run)))
		p.run(`["#mode","#adapter-url"].forEach(s => document.querySelector(s).dispatchEvent(new Event("change")))`)
		p.run(fmt.Sprintf(`(() => { const c = document.querySelector("#no-digest"); if (c && c.checked !== %v) c.click(); })()`, !digest))
		p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
		start := time.Now()
		p.click("#open-url")
		v, err := p.waitText("#verdict", "", 3*time.Minute)
		if err != nil || !(strings.Contains(v, "PASS") || strings.Contains(v, "WARN")) {
			p.shot("spans-once")
			t.Fatalf("%s: verdict %q (%v): %s", what, v, err, clip(p.text("main"), 1500))
		}
		if c.run == "cdn-digest" {
			p.shot("audit-no-claims")
		}
		if c.run == "plain-digest" {
			urlFed(t, p, ad, size)
		}
		// The pool: a worker per core (2 to 8), but one fewer where the
		// digest worker hashes the spans (its SHA-256 stream is left a
		// core).
		cores, err := eval[int](p, `Math.min(8, Math.max(2, navigator.hardwareConcurrency || 2))`)
		if err != nil {
			t.Fatal(err)
		}
		want := cores
		if c.run == "plain-digest" {
			want--
		}
		if k := p.text("#kernel"); !strings.Contains(k, "in "+report.Plural(want, "Web Worker")) {
			t.Errorf("%s: want the pool in %d Web Workers (%d cores): %q", what, want, cores, k)
		}
		if sum := p.text(".summary"); strings.Contains(sum, "claims:") {
			t.Errorf("%s: the summary names claims, none were chosen: %q", what, clip(sum, 300))
		}
		l.mu.Lock()
		var twice []string
		n := 0
		for rng, c := range l.ranges {
			var a, b int64
			if _, err := fmt.Sscanf(rng, "bytes=%d-%d", &a, &b); err != nil || b-a < 1<<20 {
				// The header's reads (bytes=0-0, 0-65535): each worker
				// that opens the file makes them.
				continue
			}
			n += c
			if c > 1 {
				twice = append(twice, fmt.Sprintf("%s ×%d", rng, c))
			}
		}
		sort.Strings(twice)
		t.Logf("%s: %s in %v; %d span reads of the safetensors file, %.1f MB sent (the file: %.1f MB)", what, clip(v, 40),
			time.Since(start).Round(time.Millisecond), n, float64(l.bytesSent)/1e6, float64(size)/1e6)
		if len(twice) > 0 {
			t.Errorf("%s: ranges asked for more than once: %v", what, twice)
		}
		if len(l.cut) > 0 {
			t.Errorf("%s: requests cut off before their body was sent: %v", what, l.cut)
		}
		if l.bytesSent < size || l.bytesSent > size+size/20 {
			t.Errorf("%s: %d bytes of the %d-byte file sent", what, l.bytesSent, size)
		}
		if n < 6 {
			t.Errorf("%s: only %d span reads: the spans were not read apart, and the test shows nothing", what, n)
		}
		l.mu.Unlock()
		switch c.run {
		case "cdn-digest":
			whole = matricesOf(t, p)
		case "cdn-nodigest":
			fromURL = matricesOf(t, p)
		case "plain-nodigest":
			fromPlain = matricesOf(t, p)
		}
	}
	// The same files picked, without the SHA-256: the dealer reads each
	// span from the File into pieces too. Both audits in pieces have the
	// figures of the one whose spans went whole: the same bytes, in the
	// same order, checked by the same kernels.
	p.run(`(() => { const c = document.querySelector("#no-digest"); if (c && !c.checked) c.click(); })()`)
	p.run(`document.querySelectorAll("#verdict").forEach(e => e.remove())`)
	p.upload("#adapter-files", filepath.Join(ad, "adapter_config.json"), filepath.Join(ad, "adapter_model.safetensors"), filepath.Join(ad, "extraction-report.json"))
	if v, err := p.waitText("#verdict", "", 3*time.Minute); err != nil || !(strings.Contains(v, "PASS") || strings.Contains(v, "WARN")) {
		p.shot("spans-picked")
		t.Fatalf("the picked files: verdict %q (%v): %s", v, err, clip(p.text("main"), 1500))
	}
	picked := matricesOf(t, p)
	for what, got := range map[string]map[string]string{"the picked files": picked, "the cached URL without the SHA-256": fromURL, "the plain URL without the SHA-256": fromPlain} {
		if len(got) != len(whole) || len(got) < 31 {
			t.Fatalf("%s: %d matrices, the spans sent whole %d (the twin has 31 pairs)", what, len(got), len(whole))
		}
		for mod, f := range whole {
			if got[mod] != f {
				t.Errorf("%s: %s: %s, with the spans whole %s", what, mod, clip(got[mod], 300), clip(f, 300))
			}
		}
	}
}

// matricesOf is the page's last audit's figures of each matrix, as JSON,
// by module.
func matricesOf(t *testing.T, p *tab) map[string]string {
	t.Helper()
	if err := p.waitJS("the download button", `!!document.querySelector("#download-json")`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Matrices []json.RawMessage `json:"matrices"`
	}
	jsonOf(t, pageReport(t, p), &r)
	out := map[string]string{}
	for _, m := range r.Matrices {
		var k struct {
			Module string `json:"module"`
		}
		if err := json.Unmarshal(m, &k); err != nil || k.Module == "" {
			t.Fatalf("a matrix without its module: %s", clip(string(m), 200))
		}
		out[k.Module] = string(m)
	}
	return out
}

// urlFed checks the page's last audit (of the twin in ad, from a URL the
// browser's cache keeps nothing of): every file's SHA-256 is the file's,
// and the safetensors file (size bytes) was hashed from the pool's spans,
// the feed fetching itself only its header and tail.
func urlFed(t *testing.T, p *tab, ad string, size int64) {
	t.Helper()
	a := downloadedAudit(t, p)
	ents, err := os.ReadDir(ad)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Provenance.Files) != len(ents) {
		t.Errorf("the plain host: %d files hashed, the adapter has %d", len(a.Provenance.Files), len(ents))
	}
	for _, f := range a.Provenance.Files {
		h := sha256.New()
		r, err := os.Open(filepath.Join(ad, f.Name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(h, r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if want := hex.EncodeToString(h.Sum(nil)); f.SHA256 != want {
			t.Errorf("the plain host: %s: the page's SHA-256 %s, the file's %s", f.Name, f.SHA256, want)
		}
	}
	if !strings.Contains(a.Summary.Kernel, "in a worker of its own (digest.js), 1 URL file hashed from the pool's spans") {
		t.Errorf("the plain host: the safetensors file was not hashed from the pool's spans: %q", a.Summary.Kernel)
	}
	if spans, alone, ok := fedBytes(a.Summary.Kernel); !ok || spans < 0.9*float64(size) || alone > 4e6 {
		t.Errorf("the plain host: %.0f bytes hashed from the spans, %.0f fetched for the digest alone (%v) of %d: %q", spans, alone, ok, size, a.Summary.Kernel)
	}
}
