package rebuild

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

// HashPrefix is how much of each tensor the identity check hashes (the card's 256 KiB).
const HashPrefix = 256 << 10

// headBytes is what the identity check reads of a tensor present in both
// checkpoints: its first HashPrefix bytes when dtype and shape agree
// (else nothing: it differs).
func headBytes(a, b safetensors.TensorInfo) int64 {
	if a.DType != b.DType || fmt.Sprint(a.Shape) != fmt.Sprint(b.Shape) {
		return 0
	}
	return min(a.Bytes(), HashPrefix)
}

// identity repeats the model card's step 1: every tensor of both
// checkpoints compared by dtype, shape and the SHA-256 of its first
// HashPrefix bytes. The heads are read opt.Concurrency at a time, one read
// (over HTTP, one Range request) each; the findings come in name order
// whatever order the reads finish in. It returns the differing tensors.
func identity(ctx context.Context, c *report.Collector, res *Result, base, tuned *safetensors.Checkpoint, opt Options, read *atomic.Int64) (map[string]bool, error) {
	names := base.Names()
	meter := progress.NewMeter("identity check", int64(len(base.Names())+len(tuned.Names())), opt.Progress)
	meter.Unit = "tensors"
	type answer struct {
		same bool
		err  error
		seen bool
	}
	answers := make([]answer, len(names))
	conc := opt.Concurrency
	if conc <= 0 {
		conc = IdentityConcurrency
	}
	idx := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if _, _, ok := tuned.Tensor(names[i]); !ok {
					continue
				}
				same, n, err := samePrefix(base, tuned, names[i])
				read.Add(n)
				answers[i] = answer{same, err, true}
				meter.Add(2)
			}
		}()
	}
	var cerr error
	for i := range names {
		if cerr = ctx.Err(); cerr != nil {
			break
		}
		idx <- i
	}
	close(idx)
	wg.Wait()
	meter.Finish()
	if cerr != nil {
		return nil, cerr
	}
	differing := map[string]bool{}
	seen := map[string]bool{}
	for i, name := range names {
		seen[name] = true
		a := answers[i]
		switch {
		case !a.seen:
			c.Addf(report.RebuildError, report.Fail, name, nil, nil, "in the base checkpoint but not in the tuned one")
		case a.err != nil:
			c.Findings = append(c.Findings, findings.Of(a.err, name)...)
		default:
			res.Compared++
			if !a.same {
				differing[name] = true
				res.Differing = append(res.Differing, name)
			}
		}
	}
	for _, name := range tuned.Names() {
		if !seen[name] {
			c.Addf(report.RebuildError, report.Fail, name, nil, nil, "in the tuned checkpoint but not in the base one")
		}
	}
	return differing, nil
}

// samePrefix compares two tensors' dtype, shape and the SHA-256 of their
// first HashPrefix bytes; it says how many bytes it read.
func samePrefix(a, b *safetensors.Checkpoint, name string) (bool, int64, error) {
	ta, ra, _ := a.Tensor(name)
	tb, rb, _ := b.Tensor(name)
	n := headBytes(ta, tb)
	if n == 0 && (ta.DType != tb.DType || fmt.Sprint(ta.Shape) != fmt.Sprint(tb.Shape)) {
		return false, 0, nil
	}
	ba, err := ra.ReadRange(ta, 0, n, nil)
	if err != nil {
		return false, 0, err
	}
	bb, err := rb.ReadRange(tb, 0, n, nil)
	if err != nil {
		return false, n, err
	}
	return sha256.Sum256(ba) == sha256.Sum256(bb), 2 * n, nil
}

// identityClaims checks the identity check's counts and differing set
// against the claims (the card: 1,184 tensors compared, 186 differ, all of
// them the adapted matrices) and the extraction report.
func identityClaims(c *report.Collector, res *Result, p *claims.Profile, rep *extraction.Report) {
	if p != nil && p.TensorsCompared > 0 && res.Compared != p.TensorsCompared {
		c.Addf(report.RebuildError, report.Warn, "checkpoints", res.Compared, p.TensorsCompared, "%d tensors compared, the claims say %d", res.Compared, p.TensorsCompared)
	}
	if p != nil && len(p.Modules) > 0 && res.Compared > 0 {
		want := map[string]bool{}
		for _, pr := range p.Pairs() {
			want[pr.Module+".weight"] = true
		}
		var extra, same []string
		for _, name := range res.Differing {
			if !want[name] {
				extra = append(extra, name)
			}
			delete(want, name)
		}
		for name := range want {
			same = append(same, name)
		}
		sort.Strings(same)
		if len(extra) > 0 {
			c.Addf(report.RebuildError, report.Fail, "checkpoints", len(extra), 0, "%d tensors differ that the claims say are identical (only the adapted matrices of layers %d–%d differ): %s", len(extra), p.FirstLayer, p.LastLayer, names(extra))
		}
		if len(same) > 0 {
			c.Addf(report.RebuildError, report.Warn, "checkpoints", len(same), 0, "%d of the matrices the claims say differ have identical first %d KiB in base and tuned: %s", len(same), HashPrefix>>10, names(same))
		}
		if len(extra) == 0 && len(same) == 0 {
			c.Addf(report.RebuildError, report.Info, "checkpoints", len(res.Differing), p.Derived().Pairs, "%d of %d tensors differ, exactly the %d matrices of layers %d–%d the claims name", len(res.Differing), res.Compared, p.Derived().Pairs, p.FirstLayer, p.LastLayer)
		}
	}
	if rep != nil {
		if rep.TensorsCompared != nil && *rep.TensorsCompared != res.Compared {
			c.Addf(report.ReportMismatch, report.Fail, "extraction-report.json", res.Compared, *rep.TensorsCompared, "%d tensors compared here, the report says %d", res.Compared, *rep.TensorsCompared)
		}
		if rep.TensorsDiffering != nil && *rep.TensorsDiffering != len(res.Differing) {
			c.Addf(report.ReportMismatch, report.Fail, "extraction-report.json", len(res.Differing), *rep.TensorsDiffering, "%d tensors differ here, the report says %d", len(res.Differing), *rep.TensorsDiffering)
		}
	}
}

// names lists a few names, and how many more there are.
func names(s []string) string {
	const shown = 5
	if len(s) <= shown {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:shown], ", "), len(s)-shown)
}
