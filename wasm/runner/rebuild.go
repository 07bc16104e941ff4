package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/hub"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// ClaimsCheckpoints sets a rebuild's Base and Tuned, when neither is
// given, to the checkpoints a claims profile names (its base and tuned
// repository at its revision: hf://repo@revision on endpoint, with
// token); the CLI passes HF_ENDPOINT and HF_TOKEN, a job without
// checkpoints the adapter's Hub. It tells whether it set them.
func ClaimsCheckpoints(spec *jobs.Spec, baseRepo, baseRev, tunedRepo, tunedRev, endpoint, token string) bool {
	if spec.Base != nil || spec.Tuned != nil || baseRepo == "" || tunedRepo == "" {
		return false
	}
	at := func(repo, rev string) *jobs.Input {
		u := "hf://" + repo
		if rev != "" {
			u += "@" + rev
		}
		return &jobs.Input{URL: u, Endpoint: endpoint, Token: token}
	}
	spec.Base, spec.Tuned = at(baseRepo, baseRev), at(tunedRepo, tunedRev)
	return true
}

// CheckpointsOf names the checkpoints of a spec's claims profile (for a
// host that fills them itself, as the CLI does with HF_ENDPOINT).
func CheckpointsOf(spec *jobs.Spec, h Host) (baseRepo, baseRev, tunedRepo, tunedRev string, err error) {
	p, err := ClaimsOf(spec, h)
	if err != nil || p == nil {
		return "", "", "", "", err
	}
	return p.Base.Repo, p.Base.Revision, p.Tuned.Repo, p.Tuned.Revision, nil
}

// rebuildOptions turns a spec's rebuild fields into the engine's options:
// the sampled rows, the byte bound (DefaultMaxBytes when sampled and none
// is given), the seed; the plan goes out as an event before anything is
// read; and URL checkpoints are read exactly once their headers are in.
func rebuildOptions(spec *jobs.Spec, base, tuned fs.FS, em *emitter) (rebuild.Options, error) {
	opt := rebuild.Options{Base: base, Tuned: tuned, Rows: spec.Rows, MaxBytes: spec.MaxBytes, Seed: spec.Seed}
	switch {
	case spec.Rows < 0:
		return opt, fmt.Errorf("rows %d: choose a positive number of rows per module, or 0 for every row", spec.Rows)
	case spec.Rows == 1:
		return opt, errors.New("rows 1: a sampled rebuild reads at least 2 rows of each module (the interval needs their variance)")
	case spec.MaxBytes < 0:
		return opt, fmt.Errorf("max bytes %d: choose a positive bound", spec.MaxBytes)
	case spec.Seed != 0 && spec.Rows == 0:
		return opt, errors.New("a seed chooses the sampled rows: give rows too")
	}
	if spec.Rows > 0 && spec.MaxBytes == 0 {
		opt.MaxBytes = jobs.DefaultMaxBytes
	}
	opt.OnPlan = func(p *report.RebuildPlan) { em.send(jobs.Event{Plan: p}) }
	opt.Exact = func() { exactReads(base, tuned) }
	return opt, nil
}

// exactReads makes URL inputs' small reads exact: every read is one Range
// request for its bytes (no 1 MB chunks, no read-ahead window), so a
// sampled rebuild fetches what it planned and the identity check one
// request per tensor head. Local files are untouched.
func exactReads(fss ...fs.FS) {
	for _, f := range fss {
		if d, ok := f.(*digestFS); ok {
			f = d.FS
		}
		var h *source.HTTP
		switch x := f.(type) {
		case *hub.FS:
			h = x.HTTP
		case *source.HTTP:
			h = x
		}
		if h != nil {
			h.Chunk, h.ReadAhead = 0, 0
		}
	}
}

// rebuildProvenance says what a rebuild checked: the checkpoints down to
// the commits their revisions resolved to, the claims, the seed.
func rebuildProvenance(spec *jobs.Spec, fss [3]fs.FS, prof *claims.Profile, res *report.Rebuild, begun time.Time) *report.Provenance {
	prov := &report.Provenance{Tool: tool(), Claims: claimsInfo(prof), Started: begun.UTC(), Seconds: time.Since(begun).Seconds(),
		Digests: report.DigestSummary{Why: "digests are computed for audits"}}
	for i, x := range []struct {
		role string
		in   *jobs.Input
	}{{"adapter", spec.Adapter}, {"base", spec.Base}, {"tuned", spec.Tuned}} {
		prov.Inputs = append(prov.Inputs, report.Input{Role: x.role, SourceInfo: sourceOf(x.in, fss[i], x.in.String())})
	}
	if res.Sample != nil {
		prov.Seed = strconv.FormatUint(res.Sample.Seed, 10)
	}
	return prov
}

// rebuildBounds are the thresholds the rebuild judged against: the claims
// profile's fidelity, or the default bound without one.
func rebuildBounds(prof *claims.Profile) *report.RebuildBounds {
	if prof == nil || prof.Fidelity.ResidualToNoiseMax <= 0 {
		b := &report.RebuildBounds{ResidualToNoiseMax: rebuild.DefaultRatioBound, From: "no claims profile: clefcheck's default bound"}
		if prof != nil {
			b.From = "claims " + prof.Name + " (no residual bound: clefcheck's default)"
			b.ResidualToNoiseMin, b.RebuiltRelErrorMax = prof.Fidelity.ResidualToNoiseMin, prof.Fidelity.RebuiltRelErrorMax
		}
		return b
	}
	f := prof.Fidelity
	return &report.RebuildBounds{ResidualToNoiseMin: f.ResidualToNoiseMin, ResidualToNoiseMax: f.ResidualToNoiseMax, RebuiltRelErrorMax: f.RebuiltRelErrorMax, From: "claims " + prof.Name}
}
