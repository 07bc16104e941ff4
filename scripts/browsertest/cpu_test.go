//go:build browser

package browsertest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// cpuThreads is a snapshot of the CPU time of every thread of every
// Chromium process (Linux's /proc), keyed by pid/tid: where a browser
// figure's time goes (the engine worker, the pool workers, the network
// service, the browser process's blob reading), for the bench's
// CLEFCHECK_CPU=1.
type cpuThreads map[string]threadCPU

type threadCPU struct {
	group string  // the process's type and the thread's name
	secs  float64 // user + system
}

// clockTicks is Linux's USER_HZ (sysconf(_SC_CLK_TCK)), 100 on every
// platform Go runs Linux on.
const clockTicks = 100

func snapshotCPU() cpuThreads {
	out := cpuThreads{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "chrom") {
			continue
		}
		kind := "browser"
		// Chromium rewrites its children's command lines, spaces between
		// the arguments.
		for _, a := range strings.FieldsFunc(string(cmd), func(r rune) bool { return r == 0 || r == ' ' }) {
			if v, ok := strings.CutPrefix(a, "--type="); ok {
				kind = v
			}
			if v, ok := strings.CutPrefix(a, "--utility-sub-type="); ok {
				kind = v
			}
		}
		tasks, _ := filepath.Glob(filepath.Join(p, "task", "[0-9]*"))
		for _, t := range tasks {
			b, err := os.ReadFile(filepath.Join(t, "stat"))
			if err != nil {
				continue
			}
			s := string(b)
			i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
			if i < 0 || j < i {
				continue
			}
			f := strings.Fields(s[j+1:]) // state is f[0]; utime, stime are fields 14, 15
			if len(f) < 13 {
				continue
			}
			u, _ := strconv.ParseFloat(f[11], 64)
			st, _ := strconv.ParseFloat(f[12], 64)
			out[p+"/"+filepath.Base(t)] = threadCPU{group: kind + ": " + s[i+1:j], secs: (u + st) / clockTicks}
		}
	}
	return out
}

// since sums the CPU seconds each group of threads spent since before,
// the busiest first: "group 1.23 s" each, and the total.
func (now cpuThreads) since(before cpuThreads) (string, float64) {
	by := map[string]float64{}
	total := 0.0
	for k, t := range now {
		d := t.secs - before[k].secs
		if d > 0 {
			by[t.group] += d
			total += d
		}
	}
	groups := make([]string, 0, len(by))
	for g := range by {
		if by[g] >= 0.05 {
			groups = append(groups, g)
		}
	}
	slices.SortFunc(groups, func(a, b string) int { return int((by[b] - by[a]) * 1000) })
	var sb strings.Builder
	for i, g := range groups {
		if i == 12 {
			break
		}
		fmt.Fprintf(&sb, "%s %.2f s; ", g, by[g])
	}
	return strings.TrimSuffix(sb.String(), "; "), total
}
