package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/jobs"
)

// rebuildFlags are the rebuild's sampling flags, shared by rebuild and
// audit --base/--tuned.
type rebuildFlags struct {
	rows     *int
	full     *bool
	maxBytes *string
	seed     *uint64
	set      map[string]bool
}

func addRebuildFlags(fs *flag.FlagSet) *rebuildFlags {
	return &rebuildFlags{
		rows:     fs.Int("rows", 0, fmt.Sprintf("sampled rebuild: `N` rows of every module from both checkpoints, read by range, with estimates and intervals (the default when a checkpoint is a URL or a Hub repository: %d rows)", jobs.DefaultRows)),
		full:     fs.Bool("full", false, "every row of every module (the default when both checkpoints are local)"),
		maxBytes: fs.String("max-bytes", "", "refuse to start when the plan reads more than `N` bytes from the two checkpoints (e.g. 512MB, 1GiB; default 512MiB when sampled, no bound when full); the plan is shown on stderr before the rebuild starts"),
		seed:     fs.Uint64("seed", 0, "the `SEED` that chooses the sampled rows (default: a fresh one, reported)"),
	}
}

// apply sets the spec's sampling fields; remote says whether a checkpoint
// is read over the network (then sampling is the default).
func (f *rebuildFlags) apply(fs *flag.FlagSet, spec *jobs.Spec, remote bool) error {
	set := map[string]bool{}
	fs.Visit(func(x *flag.Flag) { set[x.Name] = true })
	switch {
	case set["rows"] && *f.full:
		return &UsageError{Msg: "--rows (sampled) and --full are alternatives"}
	case set["rows"] && *f.rows < 2:
		return &UsageError{Msg: "--rows: at least 2 rows of each module (the interval needs their variance)"}
	case *f.full && set["seed"]:
		return &UsageError{Msg: "--seed chooses the sampled rows: not with --full"}
	}
	switch {
	case set["rows"]:
		spec.Rows = *f.rows
	case !*f.full && (remote || set["seed"]):
		spec.Rows = jobs.DefaultRows
	}
	spec.Seed = *f.seed
	if *f.maxBytes != "" {
		n, err := parseBytes(*f.maxBytes)
		if err != nil {
			return &UsageError{Msg: "--max-bytes: " + err.Error()}
		}
		spec.MaxBytes = n
	}
	return nil
}

// used tells whether any of the flags was given.
func (f *rebuildFlags) used(fs *flag.FlagSet) bool {
	u := false
	fs.Visit(func(x *flag.Flag) {
		switch x.Name {
		case "rows", "full", "max-bytes", "seed":
			u = true
		}
	})
	return u
}

// parseBytes reads a byte count: a number, optionally with kB, MB, GB
// (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(t, u.suf) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suf)), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("%q is not a positive byte count (e.g. 512MB, 1GiB, 2000000)", s)
	}
	return int64(v * float64(mult)), nil
}
