//go:build browser

package browsertest

import (
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ownGroup starts Chromium in a process group of its own (its pid), that
// the kernel still kills if the test's thread dies (Pdeathsig, as
// chromedp does), and registers the group's end with the test: Chromium's
// children (a renderer still running a worker, the network service) can
// outlive the browser process that chromedp kills, and then spin on: a
// leftover renderer of one bench ran at 96 % of a core through the next
// bench's figures. chromedp sweeps for leftovers only in a user-data-dir
// it made itself (not the test's own), and by --user-data-dir in the
// children's command lines, which Chromium rewrites with spaces.
func ownGroup(tb testing.TB) func(cmd *exec.Cmd) {
	var cmdOf atomic.Pointer[exec.Cmd] // set where chromedp starts it
	tb.Cleanup(func() {
		started := cmdOf.Load()
		if started == nil || started.Process == nil {
			return
		}
		// The browser itself is gone by now (the allocator's cancel ran
		// first): what is left of its group goes, a few passes, as a
		// child can fork while its parent dies.
		for i := 0; i < 5; i++ {
			if syscall.Kill(-started.Process.Pid, syscall.SIGKILL) != nil {
				return // no such group: all gone
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return func(cmd *exec.Cmd) {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
		cmd.SysProcAttr.Setpgid = true
		cmdOf.Store(cmd)
	}
}
