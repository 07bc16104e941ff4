package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/progress"
)

// progressPrinter shows progress on stderr for jobs longer than a second:
// one rewritten line on a terminal, a line every few seconds otherwise.
type progressPrinter struct {
	w       io.Writer
	off     bool
	tty     bool
	mu      sync.Mutex
	shown   bool
	lastLog time.Time
}

func newProgressPrinter(w io.Writer, off bool) *progressPrinter {
	p := &progressPrinter{w: w, off: off}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progressPrinter) report(s progress.Status) {
	if p.off || (s.Elapsed < time.Second && !p.shown) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
		p.shown = true
		return
	}
	if s.Final || time.Since(p.lastLog) >= 5*time.Second {
		fmt.Fprintln(p.w, s)
		p.lastLog = time.Now()
	}
}

func (p *progressPrinter) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown && p.tty {
		fmt.Fprintln(p.w)
	}
	p.shown = false
}

// line prints a line of its own on stderr (a rebuild's plan), even with
// progress off.
func (p *progressPrinter) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown && p.tty {
		fmt.Fprintln(p.w)
		p.shown = false
	}
	fmt.Fprintln(p.w, s)
}
