//go:build browser

package browsertest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// diagnose says, for a test that waited in vain, where the page's Go
// program waits: its goroutines (clefcheckStacks, defined by app.wasm),
// each on one line with the frames of clefcheck's own packages, the engine
// worker's state (whose goroutines go to Chromium's log, kept by CI), the
// browser's targets (the page, its workers, the service worker) and the
// page's service-worker controller.
func (p *tab) diagnose() string {
	if p.ctx.Err() != nil {
		return "(no diagnosis: the tab's time is up)"
	}
	var b strings.Builder
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`typeof clefcheckStacks === "function" ? clefcheckStacks() : "(no clefcheckStacks on this page)"`))
	if err != nil {
		fmt.Fprintf(&b, "the page's goroutines: unavailable (%v)\n", err)
	} else {
		head, stacks, _ := strings.Cut(s, "\n\n")
		fmt.Fprintf(&b, "%s\nthe page's goroutines:\n%s", head, compactStacks(stacks))
	}
	sw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const c = navigator.serviceWorker && navigator.serviceWorker.controller; return c ? c.scriptURL + " (" + c.state + ")" : "none" })()`))
	if err == nil {
		fmt.Fprintf(&b, "service-worker controller: %s\n", sw)
	}
	if ts, err := chromedp.Targets(ctx); err == nil {
		for _, t := range ts {
			fmt.Fprintf(&b, "target %s %s attached=%v\n", t.Type, t.URL, t.Attached)
		}
	}
	time.Sleep(time.Second) // the engine worker writes its stacks to the log
	return b.String()
}

// compactStacks puts each goroutine of a runtime.Stack dump on one line:
// its header, then its frames in clefcheck's packages (or its first frame).
func compactStacks(dump string) string {
	var b strings.Builder
	for _, g := range strings.Split(strings.TrimSpace(dump), "\n\n") {
		lines := strings.Split(g, "\n")
		var frames []string
		for i := 1; i+1 < len(lines); i += 2 {
			fn := lines[i]
			if strings.Contains(fn, "kvit-s/clefcheck") {
				loc := strings.TrimSpace(lines[i+1])
				if j := strings.LastIndex(loc, "/"); j >= 0 {
					loc = loc[j+1:]
				}
				frames = append(frames, fn[strings.LastIndex(fn, "/")+1:]+" "+loc)
			}
		}
		if len(frames) == 0 && len(lines) > 1 {
			frames = append(frames, lines[1])
		}
		fmt.Fprintf(&b, "  %s %s\n", lines[0], strings.Join(frames, " ← "))
	}
	return b.String()
}
