//go:build browser

package browsertest

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The Demo page's decision that came back and was never shown: go-app
// drops a dispatch whose source element is no longer mounted, and mounts
// an element anew when something conditional before it appears or goes.
// The result of a click reported through the clicked button's context, so
// a Decide button re-rendered as a new node meanwhile lost it and the page
// said "deciding…" forever (CI: TestBrowserGallery and
// TestBrowserStaticDirect, which clicked right after the page appeared).

// TestBrowserDemoSwitchWhileDeciding: the user switches "Decided by"
// while a decision from the site's service runs (the server field goes,
// the button is mounted anew); the decision still shows.
func TestBrowserDemoSwitchWhileDeciding(t *testing.T) {
	p := newTab(t, tabLimit)
	p.open(p.env.url+"/embed", "#demo-decide")
	// The page's question whether the site has a service is answered.
	if err := p.waitJS("the page's look at /health", `performance.getEntriesByType("resource").some(e => e.name.endsWith("/health"))`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	p.run(`window.__ccButton = document.querySelector("#demo-decide"); window.__ccButton.click()`)
	p.choose("#demo-where", "browser")
	if err := p.waitJS("the Decide button mounted anew", `window.__ccButton !== document.querySelector("#demo-decide")`, 10*time.Second); err != nil {
		t.Fatal(err) // else this test does not test what it says
	}
	if _, err := p.waitText("#demo-result", " ms", time.Minute); err != nil {
		p.shot("embed-switched")
		t.Fatalf("the decision asked before the switch is not shown: %v", err)
	}
}

// TestBrowserDemoFirstRender: a click on the Decide button of the page's
// very first render, on a static site (no decision service): a script
// clicks it as soon as go-app has put it in the DOM, before the page has
// taken its link's state and before it knows the site has no service.
// The decision waits for that answer, is made by the demo model in the
// browser, and shows, with a note saying why.
func TestBrowserDemoFirstRender(t *testing.T) {
	e := harness(t)
	site := filepath.Join(t.TempDir(), "site")
	e.clefcheck(t, "site", "--out", site, "--web", e.web, "--world", e.world)
	hs := httptest.NewServer(staticHost(site, ""))
	t.Cleanup(hs.Close)
	p := newTab(t, tabLimit)
	// Before the page's own scripts: click the first Decide button there is.
	first := `window.__ccClicked = null;
		new MutationObserver((_, o) => {
			const b = document.querySelector("#demo-decide");
			if (b && !document.getElementById("app-wasm-loader") && !window.__ccClicked) {
				window.__ccClicked = b; window.__ccServerField = !!document.querySelector("#demo-server"); o.disconnect(); b.click();
			}
		}).observe(document, {subtree: true, childList: true});`
	if err := chromedp.Do(p.ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: first})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	p.open(hs.URL+"/embed", "#demo-decide")
	if ok, _ := eval[bool](p, `!!window.__ccClicked`); !ok {
		t.Fatal("the script did not click the first Decide button")
	}
	if _, err := p.waitText("#demo-result", " ms", 90*time.Second); err != nil {
		p.shot("embed-first-render")
		t.Fatalf("the decision clicked on the first render is not shown: %v", err)
	}
	p.shot("embed-first-render")
	if note := p.text("#demo-note"); !strings.Contains(note, "No decision service answered") {
		t.Errorf("the page does not say it decided in the browser for want of a service: %q", note)
	}
	if w, _ := eval[string](p, `document.querySelector("#demo-where").value`); w != "browser" {
		t.Errorf("the page still offers %q after finding no service", w)
	}
}
