//go:build browser

package browsertest

// The harness: one clefcheck binary, one demo world and one clefcheck serve
// for the whole run (started on first use, so that a run with no test to do
// starts nothing), static sites written by clefcheck site and served by a
// plain file server, and one way to start Chromium and drive a tab.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// poll is the interval between two looks at a condition inside a wait.
const poll = 100 * time.Millisecond

// env is what the harness set up.
type env struct {
	root  string // the module's root
	tmp   string // the harness's temporary folder
	bin   string // the clefcheck binary
	web   string // app.wasm, engine.wasm and the static assets (make wasm)
	world string // the demo world (clefcheck world)
	url   string // clefcheck serve, e.g. http://127.0.0.1:40123

	setupLog string // what setup did, and how long each step took

	serve *exec.Cmd
	log   *lockedBuffer // serve's output
	exit  chan error    // serve's exit
}

var (
	setupOnce sync.Once
	shared    *env
	setupErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.close()
	}
	os.Exit(code)
}

// harness sets the shared environment up on first use: a failure fails
// every test that needs it, with the same message.
func harness(tb testing.TB) *env {
	tb.Helper()
	setupOnce.Do(func() {
		start := time.Now()
		shared, setupErr = setup()
		if setupErr == nil {
			tb.Logf("harness: %s (%v)", shared.setupLog, time.Since(start).Round(time.Millisecond))
		}
	})
	if setupErr != nil {
		tb.Fatalf("browser test harness: %v", setupErr)
	}
	return shared
}

func setup() (*env, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	e := &env{root: root, web: os.Getenv("CLEFCHECK_WEB"), log: &lockedBuffer{}}
	if e.web == "" {
		e.web = filepath.Join(root, "build", "web")
	}
	if _, err := os.Stat(filepath.Join(e.web, "app.wasm")); err != nil {
		return nil, fmt.Errorf("no app.wasm in %s (run make wasm, or set CLEFCHECK_WEB)", e.web)
	}
	if e.tmp, err = os.MkdirTemp("", "clefcheck-browser-"); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	var steps []string
	t0 := time.Now()
	step := func(what string) {
		steps = append(steps, fmt.Sprintf("%s %v", what, time.Since(t0).Round(time.Millisecond)))
		t0 = time.Now()
	}
	if e.bin = os.Getenv("CLEFCHECK_BIN"); e.bin == "" {
		e.bin = filepath.Join(e.tmp, "clefcheck")
		cmd := exec.Command(goTool(), "build", "-o", e.bin, "./cmd/clefcheck")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build ./cmd/clefcheck: %v\n%s", err, out)
		}
		step("go build ./cmd/clefcheck")
	}
	e.world = filepath.Join(e.tmp, "demo")
	if out, err := exec.Command(e.bin, "world", e.world).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("clefcheck world %s: %v\n%s", e.world, err, out)
	}
	step("clefcheck world")
	if err := e.startServe(); err != nil {
		return nil, err
	}
	step("clefcheck serve up at " + e.url)
	e.setupLog = strings.Join(steps, ", ")
	ok = true
	return e, nil
}

// startServe runs clefcheck serve on a free loopback port and waits until
// it answers 200 on /.
func (e *env) startServe() error {
	e.serve = exec.Command(e.bin, "serve", "--addr", "127.0.0.1:0", "--web", e.web, "--world", e.world)
	stdout, err := e.serve.StdoutPipe()
	if err != nil {
		return err
	}
	e.serve.Stderr = e.log
	if err := e.serve.Start(); err != nil {
		return err
	}
	e.exit = make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		// serve prints the URL it listens on ("clefcheck is at http://…/").
		re := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(e.log, line)
			if u := re.FindString(line); u != "" {
				select {
				case addr <- u:
				default:
				}
			}
		}
		e.exit <- e.serve.Wait()
	}()
	const limit = 30 * time.Second
	deadline := time.After(limit)
	select {
	case e.url = <-addr:
	case err := <-e.exit:
		e.serve = nil
		return fmt.Errorf("clefcheck serve exited before listening (%v):\n%s", err, e.log)
	case <-deadline:
		return fmt.Errorf("waited %v for clefcheck serve to say where it listens; it printed:\n%s", limit, e.log)
	}
	var last string
	for {
		if resp, err := http.Get(e.url + "/"); err != nil {
			last = err.Error()
		} else {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		select {
		case err := <-e.exit:
			e.serve = nil
			return fmt.Errorf("clefcheck serve exited (%v) before answering on %s:\n%s", err, e.url, e.log)
		case <-deadline:
			return fmt.Errorf("waited %v for clefcheck serve to answer 200 on %s/ (last: %s); it printed:\n%s", limit, e.url, last, e.log)
		case <-time.After(poll):
		}
	}
}

// close stops clefcheck serve (Ctrl-C, then kill) and removes the
// temporary folder.
func (e *env) close() {
	if e.serve != nil && e.serve.Process != nil {
		e.serve.Process.Signal(os.Interrupt)
		select {
		case <-e.exit:
		case <-time.After(10 * time.Second):
			e.serve.Process.Kill()
			<-e.exit
		}
	}
	if e.tmp != "" {
		os.RemoveAll(e.tmp)
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the clefcheck module")
	}
	return filepath.Dir(mod), nil
}

// goTool is the go command: the one on PATH, else the one that built this test.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// clefcheck runs the binary and returns its standard output.
func (e *env) clefcheck(tb testing.TB, args ...string) []byte {
	tb.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(e.bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("clefcheck %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

// staticSite writes the static site for prefix with clefcheck site, lets
// edit change it (may be nil) and serves it from a plain file server.
func staticSite(tb testing.TB, prefix string, edit func(dir string) error) *httptest.Server {
	tb.Helper()
	e := harness(tb)
	site := filepath.Join(tb.TempDir(), "site")
	e.clefcheck(tb, "site", "--out", site, "--base", prefix, "--web", e.web, "--world", e.world)
	if edit != nil {
		if err := edit(site); err != nil {
			tb.Fatal(err)
		}
	}
	hs := httptest.NewServer(staticHost(site, prefix))
	tb.Cleanup(hs.Close)
	return hs
}

// staticHost serves a generated site under prefix the way static hosts do:
// files as they are, "/x" as "/x.html" when that exists, 404.html otherwise.
func staticHost(dir, prefix string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := filepath.Join(dir, filepath.FromSlash(r.URL.Path))
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			files.ServeHTTP(w, r)
			return
		}
		if _, err := os.Stat(p + ".html"); err == nil {
			r.URL.Path += ".html"
			files.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == "/" || r.URL.Path == "" {
			http.ServeFile(w, r, filepath.Join(dir, "index.html"))
			return
		}
		w.WriteHeader(404)
		data, _ := os.ReadFile(filepath.Join(dir, "404.html"))
		w.Write(data)
	}))
}

func chromium(tb testing.TB) string {
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	tb.Fatal("no chromium: install Debian's chromium (.ci/run does)")
	return ""
}

// tab is one page in a fresh headless Chromium.
type tab struct {
	tb  testing.TB
	ctx context.Context
	env *env
}

// newTab starts Chromium with a fresh user-data-dir and opens a tab; limit
// bounds everything the tab does.
func newTab(tb testing.TB, limit time.Duration) *tab { tb.Helper(); return newTabLog(tb, limit, nil) }

// newTabLog is newTab with Chromium's log (every console message of the
// page and its workers) written to log as well.
func newTabLog(tb testing.TB, limit time.Duration, log io.Writer) *tab {
	tb.Helper()
	e := harness(tb)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(tb)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(tb.TempDir()),
		chromedp.WindowSize(1280, 1000),
		chromedp.ModifyCmdFunc(ownGroup(tb)), // its whole group ends with the test
	)
	if f := os.Getenv("CLEFCHECK_JS_FLAGS"); f != "" {
		// V8's flags, for a bench's diagnosis (e.g. --no-liftoff: every
		// wasm function optimized before it runs).
		opts = append(opts, chromedp.Flag("js-flags", f))
	}
	if f := os.Getenv("CLEFCHECK_CHROME_LOG"); f != "" {
		// Chromium's own log, with every console message of the page and
		// its workers (a Go panic in a worker shows there).
		if w, err := os.OpenFile(f, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			tb.Cleanup(func() { w.Close() })
			if log != nil {
				log = io.MultiWriter(log, w)
			} else {
				log = w
			}
		}
	}
	if log != nil {
		opts = append(opts, chromedp.Flag("enable-logging", "stderr"), chromedp.Flag("v", "0"), chromedp.CombinedOutput(log))
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	tb.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	tb.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, limit)
	tb.Cleanup(cancel3)
	// Start the browser now, so that a browser that cannot start says so here.
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("starting chromium: %v", err)
	}
	return &tab{tb: tb, ctx: ctx, env: e}
}

// do runs chromedp actions, failing the test on error.
func (p *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.tb.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.tb.Fatalf("%s: %v; the page: %s", what, err, p.state())
	}
}

// eval evaluates a JS expression.
func eval[T any](p *tab, js string, opts ...chromedp.EvaluateOption) (T, error) {
	return chromedp.Run(p.ctx, chromedp.Evaluate[T](js, opts...))
}

// run evaluates a JS statement for its effect, failing the test on error.
func (p *tab) run(js string) {
	p.tb.Helper()
	if _, err := eval[bool](p, "(() => { "+js+"; return true })()"); err != nil {
		p.tb.Fatalf("%s: %v", clip(js, 200), err)
	}
}

// appReady is true once go-app has mounted the page: app.js removes its
// #app-wasm-loader after the app's main has rendered the route and is
// waiting for events (until then the page is the server's prerendered
// HTML, whose buttons do nothing).
const appReady = `(document.readyState !== "loading" && !document.getElementById("app-wasm-loader"))`

// visible is a JS expression true when sel is in the page and laid out.
func visible(sel string) string {
	return fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length) })()`, sel)
}

// hasOption is true when the select sel offers value.
func hasOption(sel, value string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].some(o => o.value === %q)`, sel+" option", value)
}

// open loads url and waits until the app has mounted the page and sel shows.
func (p *tab) open(url, sel string) {
	p.tb.Helper()
	p.do("navigating to "+url, chromedp.Navigate(url))
	if err := p.waitJS(fmt.Sprintf("the app to start on %s (go-app's loader gone, %s shown)", url, sel), appReady+" && "+visible(sel), time.Minute); err != nil {
		p.tb.Fatal(err)
	}
}

// pollJS evaluates js until done accepts its value or d has passed: it
// returns the last value, and the last evaluation's error (nil once one
// succeeded after it) when it gives up.
func pollJS[T any](p *tab, js string, d time.Duration, done func(T) bool) (T, bool, error) {
	deadline := time.Now().Add(d)
	var last T
	var lastErr error
	for {
		// One look takes no time unless the page is stuck; give it a while.
		ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
		cancel()
		if err == nil {
			last, lastErr = v, nil
			if done(v) {
				return v, true, nil
			}
		} else {
			lastErr = err
		}
		if time.Now().After(deadline) || p.ctx.Err() != nil {
			return last, false, lastErr
		}
		time.Sleep(poll)
	}
}

// waitJS evaluates the JS expression pred until it is true, for at most d;
// the error says what was awaited (what) and what the page showed.
func (p *tab) waitJS(what, pred string, d time.Duration) error {
	p.tb.Helper()
	if _, ok, err := pollJS(p, pred, d, func(v bool) bool { return v }); !ok {
		msg := fmt.Sprintf("waited %v for %s", d, what)
		if err != nil {
			msg += fmt.Sprintf(" (the page could not be read: %v)", err)
		}
		return fmt.Errorf("%s; the page: %s\n%s", msg, p.state(), p.diagnose())
	}
	return nil
}

// waitText waits, for at most d, until sel shows and its text contains
// want; it returns the text (what it was at the deadline on error).
func (p *tab) waitText(sel, want string, d time.Duration) (string, error) {
	p.tb.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return %s ? e.innerText : null })()`, sel, visible(sel))
	v, ok, err := pollJS(p, js, d, func(v *string) bool { return v != nil && strings.Contains(*v, want) })
	if ok {
		return *v, nil
	}
	msg := fmt.Sprintf("waited %v for %s to show %q", d, sel, want)
	var text string
	if v == nil {
		msg += "; it is not on the page (or not shown)"
	} else {
		text = *v
		msg += fmt.Sprintf("; it showed %q", clip(text, 300))
	}
	if err != nil {
		msg += fmt.Sprintf(" (the page could not be read at the end: %v)", err)
	}
	return text, fmt.Errorf("%s; the page: %s\n%s", msg, p.state(), p.diagnose())
}

// text is sel's text now ("" if it is not on the page).
func (p *tab) text(sel string) string {
	s, _ := eval[string](p, fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : "" })()`, sel))
	return s
}

// state says what the page shows, for failure messages: its address, the
// error and progress lines, go-app's loader label, or the start of main.
func (p *tab) state() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const t = (s) => { const e = document.querySelector(s); return e ? e.innerText.trim().replace(/\s+/g, " ").slice(0, 400) : "" };
		const out = {at: location.pathname + location.search};
		for (const s of ["#error", "#progress", "#app-wasm-loader-label"]) { const v = t(s); if (v) out[s] = v; }
		if (Object.keys(out).length === 1) out.main = t("main") || t("body");
		return JSON.stringify(out) })()`))
	if err != nil {
		if p.ctx.Err() != nil {
			return fmt.Sprintf("(unavailable: the tab's time is up: %v)", p.ctx.Err())
		}
		return fmt.Sprintf("(unavailable: %v)", err)
	}
	return s
}

// click clicks sel in one script: go-app may replace a node between a
// query and an action.
func (p *tab) click(sel string) {
	p.tb.Helper()
	p.run(fmt.Sprintf(`document.querySelector(%q).click()`, sel))
}

// choose sets a select's (or an input's) value and fires the change event
// go-app's ValueTo listens to. go-app runs event handlers in order from one
// queue, so a click after choose sees the new value.
func (p *tab) choose(sel, value string) {
	p.tb.Helper()
	p.run(fmt.Sprintf(`const e = document.querySelector(%q); e.value = %q;
		if (e.value !== %q) throw new Error("no such value: " + [...(e.options || [])].map(o => o.value).join(", "));
		e.dispatchEvent(new Event("change"))`, sel, value, value))
}

// upload gives files to the file input sel.
func (p *tab) upload(sel string, files ...string) {
	p.tb.Helper()
	p.do("choosing files for "+sel, chromedp.SetUploadFiles(sel, files))
}

// clickAndSettle clicks sel and waits, for at most d, until the page has
// been busy (the JS expression busy true, seen by a MutationObserver set
// before the click) and is no longer: the work the click started is done.
func (p *tab) clickAndSettle(sel, busy, what string, d time.Duration) error {
	p.tb.Helper()
	p.run(fmt.Sprintf(`const busy = () => { try { return !!(%s) } catch (e) { return false } };
		window.__ccBusySeen = false;
		const o = new MutationObserver(() => { if (busy()) { window.__ccBusySeen = true; o.disconnect() } });
		o.observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true});
		document.querySelector(%q).click();
		if (busy()) { window.__ccBusySeen = true; o.disconnect() }`, busy, sel))
	return p.waitJS(fmt.Sprintf("%s (clicked %s; the page busy (%s), then no longer)", what, sel, busy),
		fmt.Sprintf(`window.__ccBusySeen && !(%s)`, busy), d)
}

// shot saves a full-page screenshot as $CLEFCHECK_SHOTS/name.png.
func (p *tab) shot(name string) {
	dir := os.Getenv("CLEFCHECK_SHOTS")
	if dir == "" {
		dir = filepath.Join(p.env.root, "scripts", "out", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.tb.Logf("screenshot %s: %v", name, err)
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.tb.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		p.tb.Logf("screenshot %s: %v", name, err)
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// listDir is the paths of the files in dir.
func listDir(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, filepath.Join(dir, e.Name()))
	}
	return out
}

// jsonOf decodes a clefcheck --json (or claims) output.
func jsonOf(tb testing.TB, data []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, clip(string(data), 500))
	}
}

// lockedBuffer is an io.Writer safe for the serve process's two streams.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var _ io.Writer = (*lockedBuffer)(nil)
