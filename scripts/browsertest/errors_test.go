//go:build browser

package browsertest

// Checks that cannot be completed: a URL that answers 404, a decision
// server that is down, one that answers without CORS. Each reads ERROR on
// a grey badge, says why and how to fix it, and shows no figure it did not
// measure.

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// deadURL is the URL of a loopback port nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String()
	ln.Close()
	return u
}

// greyBadge checks that sel reads ERROR on the grey of .badge.error, not
// the red of a failure.
func greyBadge(t *testing.T, p *tab, sel string) {
	t.Helper()
	// Any verdict ends the wait: a wrong one is said at once.
	if err := p.waitJS("a verdict in "+sel, visible(sel), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	text := p.text(sel)
	bg, _ := eval[string](p, `getComputedStyle(document.querySelector("`+sel+`")).backgroundColor`)
	cls, _ := eval[string](p, `document.querySelector("`+sel+`").className`)
	if strings.TrimSpace(text) != "ERROR" || bg != "rgb(85, 93, 107)" || !strings.Contains(cls, "error") {
		t.Errorf("%s reads %q with class %q on %s, want ERROR on the grey rgb(85, 93, 107)", sel, text, cls, bg)
	}
}

// TestBrowserAuditNotFound: an audit of a URL that answers 404 reads
// ERROR, names input.missing with its hint, and shows no inventory.
// (The page reads the verdict from the engine's result: while the audit
// turns a folder URL's missing adapter_config.json into config.invalid
// and file.unreadable (fail) — wasm/audit, as clefcheck audit --json URL
// shows — this fails on the verdict; the figures are already gone.)
func TestBrowserAuditNotFound(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/", "#load-demo")
	p.choose("#adapter-url", p.env.url+"/demo/no-such-adapter/")
	p.click("#open-url")
	greyBadge(t, p, "#verdict")
	p.shot("audit-404")
	why, err := p.waitText("#could-not", "input.missing", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(why, "404") || !strings.Contains(why, "How to fix") {
		t.Errorf("the reason does not say 404 and how to fix it: %q", why)
	}
	main := p.text("main")
	for _, bad := range []string{"0 pairs", "scaling", "FAIL", "Pairs"} {
		if strings.Contains(main, bad) {
			t.Errorf("the page shows %q for an adapter it could not read: %s", bad, clip(main, 600))
		}
	}
}

// runDecisionsAgainst loads the demo records and sends them to server.
func runDecisionsAgainst(t *testing.T, p *tab, server string) {
	t.Helper()
	p.open(p.env.url+"/decisions", "#use-demo")
	p.click("#use-demo")
	if _, err := p.waitText("#run", "Run 36 records", 2*time.Minute); err != nil {
		t.Fatalf("records not loaded: %v", err)
	}
	p.choose("#server-url", server)
	p.click("#run")
}

// TestBrowserDecisionsDeadServer: a decision server that is down (a closed
// loopback port) leaves every record unchecked: ERROR, no agreement or
// latency, and no CORS card (nothing answers: it is not a CORS refusal).
func TestBrowserDecisionsDeadServer(t *testing.T) {
	p := newTab(t, tabLimit)
	dead := deadURL(t)
	runDecisionsAgainst(t, p, dead)
	greyBadge(t, p, "#decisions-verdict")
	_, err := p.waitText("#no-answer", "does not answer", 30*time.Second)
	p.shot("decisions-dead-server")
	if err != nil {
		t.Fatal(err)
	}
	if why := p.text("#could-not"); !strings.Contains(why, "decision.failed") || !strings.Contains(why, "35 more alike") {
		t.Errorf("the reason is not one decision.failed for the 36 records: %q", why)
	}
	for _, sel := range []string{"#cors-hint", "#agreement", "#latency-histogram"} {
		if n, _ := eval[int](p, `document.querySelectorAll("`+sel+`").length`); n != 0 {
			t.Errorf("%s shown for a server that does not answer: %s", sel, clip(p.text("main"), 600))
		}
	}
	if s := p.text("#decisions-summary"); strings.Contains(s, "p50") || strings.Contains(s, "agree") {
		t.Errorf("figures for no answer: %q", s)
	}
}

// TestBrowserDecisionsNoCORS: a server that answers but not CORS: ERROR,
// and the CORS card offering clefcheck proxy.
func TestBrowserDecisionsNoCORS(t *testing.T) {
	p := newTab(t, tabLimit)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`))
	}))
	t.Cleanup(hs.Close)
	runDecisionsAgainst(t, p, hs.URL)
	greyBadge(t, p, "#decisions-verdict")
	text, err := p.waitText("#cors-hint", "clefcheck proxy --to "+hs.URL+" --allow-origin "+p.env.url, 30*time.Second)
	p.shot("decisions-no-cors")
	if err != nil {
		t.Fatalf("no CORS card: %v (%q)", err, text)
	}
	if n, _ := eval[int](p, `document.querySelectorAll("#no-answer").length`); n != 0 {
		t.Error("a server that answers is said not to answer")
	}
}

// TestBrowserHiddenDeadServer: the Hidden states page captured live from a
// server that is down reads ERROR, with no cosine or error figures.
func TestBrowserHiddenDeadServer(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/hidden", "#hidden-demo")
	p.choose("#hidden-server", deadURL(t))
	p.click("#hidden-demo")
	greyBadge(t, p, "#hidden-verdict")
	p.shot("hidden-dead-server")
	if why := p.text("#could-not"); why == "" {
		t.Error("no reason given")
	}
	main := p.text("main")
	for _, bad := range []string{"worst cosine", "0 compared", "FAIL"} {
		if strings.Contains(main, bad) {
			t.Errorf("the page shows %q with nothing compared: %s", bad, clip(main, 600))
		}
	}
}
