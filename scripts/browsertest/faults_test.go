//go:build browser

package browsertest

// Faults survived: the 1.40 GB twin served the way the Hub serves it (its
// weights 302 to a CDN on another origin, with a signed URL that expires
// after 8 s, so that the audit outlives it),
// with one request in five cut mid-body, reset, or answered 503 or 429,
// audited in the page; and a URL that names nothing.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kvit-s/clefcheck/wasm/hub/hubtest"
)

// TestBrowserFaultyHub audits the twin (CLEFCHECK_FULL, as make
// bench-browser sets it: the folder holding adapter/) from a faulty
// Hub-like server in the page, in each mode (quick, randomized, exact; the
// browser's cache of ranges cleared before each): PASS, with the retried
// reads counted in the summary's kernel line and no token sent to the CDN;
// then a URL of the same Hub that names nothing: the verdict reads ERROR.
// CLEFCHECK_CLEAN=1 first runs the same audit with no faults, for the
// wall-time comparison.
func TestBrowserFaultyHub(t *testing.T) {
	full := os.Getenv("CLEFCHECK_FULL")
	if full == "" {
		t.Skip("set CLEFCHECK_FULL to the 1.40 GB twin's folder (clefcheck world --full DIR; make test-full builds build/full)")
	}
	if _, err := os.Stat(filepath.Join(full, "adapter", "adapter_model.safetensors")); err != nil {
		t.Fatalf("CLEFCHECK_FULL=%s holds no twin (clefcheck world --full %s): %v", full, full, err)
	}
	hub := hubtest.New()
	defer hub.Close()
	hub.FaultRate, hub.Seed, hub.URLTTL = 0.2, 10, 8*time.Second
	if _, err := hub.Add("kvit-s/clef-lora-r256", "main", filepath.Join(full, "adapter"), ""); err != nil {
		t.Fatal(err)
	}
	base := hub.Base("kvit-s/clef-lora-r256", "main")
	p := newTab(t, 25*time.Minute)
	p.open(p.env.url+"/", "#load-demo")
	if err := p.waitJS("the engine worker to list its claims profiles", engineListed, time.Minute); err != nil {
		t.Fatal(err)
	}
	audit := func(run, mode, url, want string, d time.Duration) (time.Duration, string) {
		t.Helper()
		p.do("choosing the claims, mode and URL",
			chromedp.SetValue("#claims", "clef-lora-r256"), chromedp.SetValue("#mode", mode),
			chromedp.SetValue("#adapter-url", url))
		p.run(`["#claims","#mode","#adapter-url"].forEach(s => document.querySelector(s).dispatchEvent(new Event("change")))`)
		// The new audit has started when the previous verdict is gone: wait
		// for that when the previous one reads as the awaited one (a quick
		// audit may come and go between two looks otherwise).
		prev := p.text("#verdict")
		start := time.Now()
		p.click("#open-url")
		var err error
		if strings.Contains(prev, want) {
			err = p.waitJS("the previous verdict to go (the "+run+" audit started)", `!document.querySelector("#verdict")`, time.Minute)
		}
		var text string
		if err == nil {
			text, err = p.waitText("#verdict", want, d)
		}
		wall := time.Since(start)
		p.shot("faulty-hub-" + run)
		if err != nil {
			t.Fatalf("%s audit: %v", run, err)
		}
		return wall, text
	}
	if os.Getenv("CLEFCHECK_CLEAN") != "" {
		hub.SetFaults(false)
		clearCache(t, p)
		wall, _ := audit("clean", "randomized", base, "PASS", 3*time.Minute)
		t.Logf("clean: PASS in %v; %s; hub: %s", wall.Round(10*time.Millisecond), p.text("#kernel"), hub.Stats())
		hub.SetFaults(true)
	}
	// Each mode reads the bytes through the faults: the browser's cache of
	// byte ranges is cleared before each, so that none is served from it.
	for _, mode := range []string{"quick", "randomized", "exact"} {
		clearCache(t, p)
		before := hub.Stats()
		wall, _ := audit("faulty-"+mode, mode, base, "PASS", 6*time.Minute)
		st := hub.Stats()
		kernel := p.text("#kernel")
		t.Logf("%s, faulty (1 in 5 requests): PASS in %v; %s; hub: %d requests, %d faulted, %d redirects, %d expired, %d leaks (all: %s)",
			mode, wall.Round(10*time.Millisecond), kernel, st.Requests-before.Requests, st.Faulted()-before.Faulted(),
			st.Redirects-before.Redirects, st.Expired-before.Expired, st.Leaks, st)
		if st.Faulted() == before.Faulted() || st.Redirects == before.Redirects || st.Leaks != 0 {
			t.Errorf("%s: the hub saw no fault, no redirect, or a token: %s", mode, st)
		}
		if m := regexp.MustCompile(`(\d+) range reads retried`).FindStringSubmatch(kernel); m == nil || m[1] == "0" {
			t.Errorf("%s: the summary does not count the retried reads: %q", mode, kernel)
		}
		// The cache was empty: the 1.40 GB came through the faulty Hub (in
		// segments of 16–32 MB; what the summary counts as read from the
		// cache is what the audit itself kept and read again).
		if n := st.Requests - before.Requests; n < 40 {
			t.Errorf("%s: only %d requests reached the Hub for 1.40 GB", mode, n)
		}
	}
	if st := hub.Stats(); st.Expired == 0 {
		t.Errorf("no signed URL expired during the audits (the re-resolve path went untested): %s", st)
	}

	// A URL that names nothing: ERROR (input.missing), not FAIL.
	_, text := audit("missing", "randomized", base+"no-such-adapter/", "ERROR", time.Minute)
	page := p.text(".summary") + " " + p.text("main")
	if !strings.Contains(text, "ERROR") || !strings.Contains(page, "input.missing") {
		t.Errorf("missing URL: verdict %q, the page says %q", text, clip(page, 400))
	}
	fmt.Fprintln(os.Stderr) // keep go test -v's lines apart from chromium's
}

// clearCache empties the browser's cache of byte ranges (the Audit page's
// cache bar) and waits until it says it holds nothing.
func clearCache(t *testing.T, p *tab) {
	t.Helper()
	if _, err := p.waitText("#cache-size", "Cache", 30*time.Second); err != nil {
		t.Fatalf("the cache bar: %v", err)
	}
	if strings.Contains(p.text("#cache-size"), "Cache off") {
		return
	}
	p.click("#cache-clear")
	if s, err := p.waitText("#cache-size", "(0 ranges)", 30*time.Second); err != nil {
		t.Fatalf("clearing the cache: %q %v", s, err)
	}
}
