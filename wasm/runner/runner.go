// Package runner runs the jobs of package jobs with the engine: in the
// browser's engine worker (wasm/browser/worker), and natively for the
// component tests and any Go host.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// Host is what a job needs from where it runs.
type Host struct {
	// Open returns the files of an input (required).
	Open func(in *jobs.Input) (fs.FS, error)
	// AuditRemote, when set, may return an audit.Options.Remote checking
	// the pairs elsewhere (the browser's pool of workers); onStart is told
	// how many started and with what kernels.
	AuditRemote func(fsys fs.FS, in *jobs.Input, opt audit.Options, onStart func(n int, kernel string)) func(context.Context, []audit.Job, func(int64)) ([]audit.Figures, error)
	// Yield, when set, is called between units of work.
	Yield func() error
}

// Run runs spec, calling emit (from any goroutine, never concurrently)
// with its events.
func Run(ctx context.Context, spec *jobs.Spec, h Host, emit func(jobs.Event)) (*jobs.Output, error) {
	if h.Open == nil {
		return nil, errors.New("runner: no way to open inputs")
	}
	em := &emitter{emit: emit}
	switch spec.Kind {
	case jobs.KindAudit:
		return runAudit(ctx, spec, h, em)
	case jobs.KindOpen:
		return runOpen(spec, h)
	case jobs.KindSample:
		return runSample(spec, h)
	case jobs.KindRebuild:
		return runRebuild(ctx, spec, h, em)
	case jobs.KindHidden:
		return runHidden(ctx, spec, h, em)
	case jobs.KindRecords:
		return runRecords(spec, h)
	case jobs.KindDecisions:
		return runDecisions(ctx, spec, h, em)
	case jobs.KindDecide:
		return runDecide(ctx, spec, h)
	case jobs.KindClaims:
		return runClaims(spec, h)
	}
	return nil, fmt.Errorf("runner: unknown kind %q", clip(spec.Kind, 40))
}

// emitter serialises events and keeps progress to about ten a second
// (a final status always goes out).
type emitter struct {
	emit func(jobs.Event)
	mu   sync.Mutex
	last time.Time
}

func (m *emitter) send(e jobs.Event) {
	if m.emit == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.Status != nil && !e.Status.Final {
		if now := time.Now(); now.Sub(m.last) < 100*time.Millisecond {
			return
		} else {
			m.last = now
		}
	}
	m.emit(e)
}

func (m *emitter) status(s progress.Status) { m.send(jobs.Event{Status: &s}) }

func open(h Host, in *jobs.Input, what string) (fs.FS, error) {
	if in == nil {
		return nil, fmt.Errorf("no %s given", what)
	}
	f, err := h.Open(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return f, nil
}

// ClaimsOf is the claims profile a spec names: a built-in profile, a
// profile given as JSON, or none.
func ClaimsOf(spec *jobs.Spec) (*claims.Profile, error) {
	switch {
	case len(spec.ClaimsJSON) > 0:
		return claims.Parse(spec.ClaimsJSON)
	case spec.Claims != "":
		return claims.Builtin(spec.Claims)
	}
	return nil, nil
}

func runAudit(ctx context.Context, spec *jobs.Spec, h Host, em *emitter) (*jobs.Output, error) {
	prof, err := ClaimsOf(spec)
	if err != nil {
		return nil, fmt.Errorf("claims: %v", err)
	}
	fsys, err := open(h, spec.Adapter, "adapter")
	if err != nil {
		return nil, err
	}
	opt := audit.Options{Claims: prof, Workers: 1, Progress: em.status,
		OnInventory: func(r *audit.Result) {
			if spec.Label != "" {
				r.Summary.Adapter = spec.Label
			}
			em.send(jobs.Event{Inventory: r})
		},
		Yield: func() error {
			if h.Yield != nil {
				if err := h.Yield(); err != nil {
					return err
				}
			}
			return ctx.Err()
		},
	}
	if opt.Mode, err = report.ParseMode(string(spec.Mode)); err != nil {
		return nil, err
	}
	started, kernel, engine := 0, "", ""
	if h.AuditRemote != nil {
		opt.Remote = h.AuditRemote(fsys, spec.Adapter, opt, func(n int, k string) {
			started, kernel = n, k
			engine = fmt.Sprintf("%d Web Workers", n)
			em.send(jobs.Event{Engine: engine})
		})
	}
	res, err := audit.Run(ctx, fsys, ".", opt)
	if err != nil && opt.Remote != nil && started == 0 && ctx.Err() == nil {
		// No worker of the pool could start (a browser without nested
		// workers): check the pairs here, in this worker.
		engine = "the engine worker (a pool could not start: " + clip(err.Error(), 200) + ")"
		em.send(jobs.Event{Engine: engine})
		opt.Remote = nil
		res, err = audit.Run(ctx, fsys, ".", opt)
	}
	if err != nil {
		return nil, err
	}
	k := res.Summary.Kernel
	if started > 0 {
		k = kernel
	}
	if engine != "" {
		k = strings.TrimPrefix(k+"; ", "; ") + "in " + engine
	}
	res.Summary.Kernel = k
	if spec.Label != "" {
		res.Summary.Adapter = spec.Label
	}
	return &jobs.Output{Audit: res, Markdown: AuditMarkdown(res)}, nil
}

var clip = report.Clip

// maxClaimsFile bounds a claims profile file (the built-in ones are 2 KB).
const maxClaimsFile = 1 << 20

// runClaims lists the built-in profiles and, given a file, checks it as a
// profile (strictly, as the audit will read it).
func runClaims(spec *jobs.Spec, h Host) (*jobs.Output, error) {
	out := &jobs.Output{ClaimNames: claims.Names()}
	if spec.ClaimsFile == nil {
		return out, nil
	}
	fsys, err := open(h, spec.ClaimsFile, "claims file")
	if err != nil {
		return nil, err
	}
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	if len(ents) != 1 || ents[0].IsDir() {
		return nil, errors.New("choose one claims JSON file")
	}
	data, err := source.ReadSmall(fsys, ents[0].Name(), maxClaimsFile)
	if err != nil {
		return nil, err
	}
	p, err := claims.Parse(data)
	if err != nil {
		return nil, err
	}
	out.ClaimsName, out.ClaimsJSON = p.Name, data
	return out, nil
}
