package rebuild

import (
	"fmt"

	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// identityPlan is what the identity check reads from the two checkpoints:
// the tensor heads and their bytes.
func identityPlan(base, tuned *safetensors.Checkpoint) (reads int, bytes int64) {
	for _, name := range base.Names() {
		tb, _, _ := base.Tensor(name)
		tt, _, ok := tuned.Tensor(name)
		if !ok {
			continue
		}
		if n := headBytes(tb, tt); n > 0 {
			reads += 2
			bytes += 2 * n
		}
	}
	return reads, bytes
}

// rowsOf is how many stored rows of j a rebuild reads: all of them when
// full (rows = 0), else min(rows, all).
func rowsOf(j *job, rows int) int {
	if rows <= 0 {
		return j.units
	}
	return min(rows, j.units)
}

// rowPlan is what the modules' rows cost from the two checkpoints, and
// the adapter's factors they need.
func rowPlan(jobs []*job, rows int) (n int64, bytes, adapter int64) {
	for _, j := range jobs {
		k := rowsOf(j, rows)
		n += int64(k)
		bytes += 2 * int64(k) * j.rowBytes
		adapter += factorBytes(j, k)
	}
	return n, bytes, adapter
}

// factorBytes is what a module's factors cost when k stored rows are
// rebuilt: A whole, and B's k rows (with fan_in_fan_out, or when every row
// is rebuilt, B whole).
func factorBytes(j *job, k int) int64 {
	a := j.ta.Bytes()
	if j.fanIn || k >= j.units {
		return a + j.tb.Bytes()
	}
	return a + int64(k)*int64(j.r)*int64(dtype.Size(j.tb.DType))
}

// planOf is the rebuild's plan, from the headers alone.
func planOf(jobs []*job, base, tuned *safetensors.Checkpoint, opt Options) *report.RebuildPlan {
	p := &report.RebuildPlan{Mode: report.RebuildFull, Modules: len(jobs), MaxBytes: opt.MaxBytes}
	if opt.Rows > 0 {
		p.Mode, p.RowsPerModule = report.RebuildSampled, opt.Rows
	}
	p.IdentityReads, p.IdentityBytes = identityPlan(base, tuned)
	p.Rows, p.RowBytes, p.AdapterBytes = rowPlan(jobs, opt.Rows)
	p.Bytes = p.IdentityBytes + p.RowBytes
	return p
}

// overBudget says why a plan does not start and what would fit.
func overBudget(p *report.RebuildPlan, jobs []*job, base, tuned *safetensors.Checkpoint, opt Options) string {
	msg := fmt.Sprintf("not started: the rebuild would read %s from the two checkpoints (%s of tensor heads for the identity check, %s of rows), more than the %s allowed (max bytes, --max-bytes)",
		report.MB(p.Bytes), report.MB(p.IdentityBytes), report.MB(p.RowBytes), report.MB(opt.MaxBytes))
	if _, b2, _ := rowPlan(jobs, 2); p.IdentityBytes+b2 > opt.MaxBytes {
		return msg + ": the identity check and 2 rows per module alone exceed it; allow more bytes"
	}
	// The most rows per module that fit (the cost grows with the rows).
	lo, hi := 2, 2
	for _, j := range jobs {
		hi = max(hi, j.units)
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, b, _ := rowPlan(jobs, mid); p.IdentityBytes+b <= opt.MaxBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return msg + fmt.Sprintf(": choose at most %d rows per module (--rows %d), or allow more bytes", lo, lo)
}
