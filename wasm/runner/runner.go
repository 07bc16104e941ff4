package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/claims"
	"github.com/kvit-s/clefcheck/wasm/extraction"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// Host is what a job needs from where it runs.
type Host struct {
	// Open returns the files of an input (required).
	Open func(in *jobs.Input) (fs.FS, error)
	// AuditRemote, when set, may return an audit.Options.Remote checking
	// the pairs elsewhere (the browser's pool of workers); onStart is told
	// how many started, with what kernels, and how they were started ("" or
	// a phrase the kernel line shows after the count).
	AuditRemote func(fsys fs.FS, in *jobs.Input, opt audit.Options, onStart func(n int, kernel, how string)) func(context.Context, []audit.Job, func(int64)) ([]audit.Figures, error)
	// DigestWindow, when positive, makes an audit's digests take every
	// range the adapter's source reads (for the audit's remote checkers
	// too: the browser's dealer fetches their spans), holding up to this
	// many bytes that come before their turn: fewer are read again at the
	// end. Natively zero: what the audit reads in order is hashed, the rest
	// read again.
	DigestWindow int64
	// LocalChunk, when positive, is audit.Options.ReadChunk for a quick
	// audit of local files (natively: pread from the page cache, where a
	// small read costs no more per byte; Native sets it).
	LocalChunk int64
	// HashFile, when set, may hash a whole file of fsys (of size bytes)
	// itself, off the check's path: the browser's digest worker reading a
	// picked File, or taking a URL's bytes from the spans the audit's
	// dealer fetches for its pool. It starts the hash and returns a
	// function waiting for the digest and the seconds the hash took there;
	// ok false leaves the file to the digest here (its read-ahead, its
	// window, its Finish). Bytes the check reads of a file it took do not
	// count for the digest here.
	HashFile func(fsys fs.FS, name string, size int64) (wait func(context.Context) (sum []byte, seconds float64, err error), ok bool)
	// Yield, when set, is called between units of work.
	Yield func() error
	// Create, when set, opens a job's output file (a slash-separated path
	// such as answers/arc.jsonl) for writing; jobs with Save need it.
	Create func(name string) (io.WriteCloser, error)

	ctx context.Context // the job's (Run sets it): its URL sources read under it
}

// Run runs spec, calling emit (from any goroutine, never concurrently)
// with its events.
//
// A check (audit, rebuild, hidden, answers, decisions) always ends with its
// result: when it could not be completed — an input missing or unreachable,
// a refused request, a cancellation, a spec it cannot run — the result
// carries verdict error and a finding that says why and how to fix it, and
// no figure that was not measured; the error is nil. The other kinds return
// their error.
func Run(ctx context.Context, spec *jobs.Spec, h Host, emit func(jobs.Event)) (*jobs.Output, error) {
	if h.Open == nil {
		return nil, errors.New("runner: no way to open inputs")
	}
	begun := time.Now()
	h.ctx = ctx
	out, err := dispatch(ctx, spec, h, &emitter{emit: emit})
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err) // cancelled: whatever broke on the way
	}
	if err != nil {
		if o := errorOutput(spec, err); o != nil {
			out, err = o, nil
		}
	}
	if out != nil {
		stamp(out, spec, begun)
		if spec.Kind != jobs.KindChart {
			out.Charts = append(out.Charts, figures(out)...)
		}
		if out.Audit != nil {
			out.Lines = out.Audit.Summary.Lines(false)
		}
		if ts := Tables(out); len(ts) > 0 {
			out.Tables = keepTables(ts)
		}
	}
	return out, err
}

func dispatch(ctx context.Context, spec *jobs.Spec, h Host, em *emitter) (*jobs.Output, error) {
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
	case jobs.KindAnswers:
		return runAnswers(spec, h)
	case jobs.KindRecords:
		return runRecords(spec, h)
	case jobs.KindDecisions:
		return runDecisions(ctx, spec, h, em)
	case jobs.KindDecide:
		return runDecide(ctx, spec, h)
	case jobs.KindClaims:
		return runClaims(spec, h)
	case jobs.KindSource:
		return runSource(ctx, spec)
	case jobs.KindChart:
		return runChart(spec)
	case jobs.KindCodes:
		return &jobs.Output{Codes: report.Codes}, nil
	case jobs.KindTable:
		return tableJob(spec)
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
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	// A source opened for this job from a URL (a new one each time) reads
	// under the job's context: cancelling the job stops its reads, which
	// would otherwise go on, retried, for up to their budget.
	if c, ok := f.(interface{ SetContext(context.Context) }); ok && in.URL != "" && h.ctx != nil {
		c.SetContext(h.ctx)
	}
	return f, nil
}

// ClaimsOf is the claims profile a spec names: a profile given as JSON, a
// built-in profile, a profile file, or none.
func ClaimsOf(spec *jobs.Spec, h Host) (*claims.Profile, error) {
	var p *claims.Profile
	var err error
	switch {
	case len(spec.ClaimsJSON) > 0:
		p, err = claims.Parse(spec.ClaimsJSON)
	case spec.Claims != "":
		p, err = claims.Builtin(spec.Claims)
	case spec.ClaimsFile != nil:
		var fsys fs.FS
		var name string
		if fsys, name, err = onlyFile(h, spec.ClaimsFile, "claims file"); err == nil {
			p, err = claims.Load(fsys, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	return p, nil
}

// onlyFile opens an input that holds one file (a claims profile, an
// extraction report) and names it.
func onlyFile(h Host, in *jobs.Input, what string) (fs.FS, string, error) {
	fsys, err := open(h, in, what)
	if err != nil {
		return nil, "", err
	}
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", what, err)
	}
	if len(ents) != 1 || ents[0].IsDir() {
		return nil, "", fmt.Errorf("%s: choose one file", what)
	}
	return fsys, ents[0].Name(), nil
}

// workers is the spec's parallelism: natively all cores unless it says
// otherwise (0); the browser's engine worker runs one.
func workers(spec *jobs.Spec) int { return max(0, spec.Workers) }

func runAudit(ctx context.Context, spec *jobs.Spec, h Host, em *emitter) (*jobs.Output, error) {
	prof, err := ClaimsOf(spec, h)
	if err != nil {
		return nil, err
	}
	begun := time.Now()
	fsys, err := open(h, spec.Adapter, "adapter")
	if err != nil {
		return nil, err
	}
	raw := fsys // what a remote checker opens on its own
	var dig *digestFS
	window, inFileOrder := h.DigestWindow, false
	if window == 0 && h.AuditRemote == nil && spec.Adapter.URL != "" {
		// Natively from a URL (a Hub repository): the pairs in file order,
		// their ranges hashed as they pass, a worker whose range came
		// early waiting for those before it, so that the digest reads
		// nothing again (out of order, Finish would download the whole
		// file a second time) and holds no copy.
		inFileOrder = true
	}
	if !spec.NoDigest {
		dig = newDigestFS(fsys, window)
		dig.waits = inFileOrder
		dig.hashFile = h.HashFile
		fsys = dig
	}
	if (spec.Base == nil) != (spec.Tuned == nil) {
		return nil, errors.New("the rebuild check needs both the base and the tuned checkpoint")
	}
	opt := audit.Options{Claims: prof, Workers: workers(spec), Progress: em.status, InFileOrder: inFileOrder && dig != nil,
		OnInventory: func(r *audit.Result) {
			if spec.Label != "" {
				r.Summary.Adapter = spec.Label
			}
			em.send(jobs.Event{Inventory: r, Lines: r.Summary.Lines(true)})
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
	if spec.Adapter.URL == "" {
		opt.ReadChunk = h.LocalChunk
	}
	// Local files are hashed by a read-ahead hasher (one core's SHA-256,
	// digestFS): while it runs, the check leaves it a core of its own.
	// A quick audit is bound by the hasher (the scan is a fraction of its
	// work); a deep one by the Grams, whose workers would otherwise share
	// the cores with the hasher three ways and leave it to end alone
	// (exact audit of the twin with digests, 2 cores: 1.34-1.54 s so,
	// against 1.48-1.69 s with the hasher sharing, in the same runs).
	if dig != nil {
		opt.Reserved = dig.Reserved
	}
	if spec.ReportFile != nil {
		rf, name, err := onlyFile(h, spec.ReportFile, "extraction report")
		if err != nil {
			return nil, err
		}
		if opt.Report, err = extraction.Load(rf, name); err != nil {
			return nil, fmt.Errorf("extraction report: %w", err)
		}
		opt.ReportName = name
	}
	started, kernel, engine := 0, "", ""
	if h.AuditRemote != nil {
		opt.Remote = h.AuditRemote(raw, spec.Adapter, opt, func(n int, k, how string) {
			started, kernel = n, k
			engine = report.Plural(n, "Web Worker")
			if how != "" { // e.g. how the workers were started
				engine += " (" + how + ")"
			}
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
	if spec.Base != nil {
		base, err := open(h, spec.Base, "base checkpoint")
		if err != nil {
			return nil, err
		}
		tuned, err := open(h, spec.Tuned, "tuned checkpoint")
		if err != nil {
			return nil, err
		}
		ropt, err := rebuildOptions(spec, base, tuned, em)
		if err != nil {
			return nil, err
		}
		ropt.Adapter, ropt.Claims, ropt.Report, ropt.Workers, ropt.Progress = fsys, prof, opt.Report, workers(spec), em.status
		if res.Rebuild, err = rebuild.Run(ctx, ropt); err == nil {
			res.Rebuild.Bounds = rebuildBounds(prof)
		}
		if err != nil {
			return nil, err
		}
		res.Add(res.Rebuild.Findings...)
	}
	label := spec.Label
	if label == "" {
		label = spec.Adapter.String()
	}
	prov := &report.Provenance{Tool: toolFor(spec), Source: sourceOf(spec.Adapter, fsys, label), Claims: claimsInfo(prof), Mode: opt.Mode, Started: begun.UTC()}
	if opt.Mode == report.ModeRandomized {
		prov.Seed = "per pair, from its module name (deterministic: the same adapter gives the same probes)"
	}
	if dig != nil {
		res.Add(digests(ctx, dig, prov)...)
	} else {
		prov.Digests.Why = "switched off for this audit"
	}
	prov.Seconds = time.Since(begun).Seconds()
	res.Provenance = prov
	out := &jobs.Output{Audit: res, Markdown: AuditMarkdown(res), Badge: report.Badge("clefcheck", res.Verdict), Provenance: ProvenanceText(prov)}
	if st, err := report.Attest(res); err != nil {
		out.NoAttestation = err.Error()
	} else if out.Attestation, err = st.MarshalIndent(); err != nil {
		out.NoAttestation = err.Error()
	}
	return out, nil
}

var clip = report.Clip

// runClaims lists the built-in profiles; given a built-in name it returns
// that profile's JSON, given a file it checks it as a profile (strictly,
// as the audit will read it).
func runClaims(spec *jobs.Spec, h Host) (*jobs.Output, error) {
	out := &jobs.Output{ClaimNames: claims.Names()}
	for _, n := range out.ClaimNames {
		p, err := claims.Builtin(n)
		if err != nil {
			return nil, err
		}
		d := p.Derived()
		out.Profiles = append(out.Profiles, report.ProfileInfo{Name: n, Adapter: p.Adapter, Rank: p.Rank, Pairs: d.Pairs, Parameters: d.Parameters, Reference: p.Reference.Source,
			Base: refSource(p.Base), Tuned: refSource(p.Tuned)})
	}
	switch {
	case spec.Claims != "":
		data, err := claims.JSON(spec.Claims)
		if err != nil {
			return nil, fmt.Errorf("no built-in claims profile %q (%s)", clip(spec.Claims, 60), strings.Join(out.ClaimNames, ", "))
		}
		out.ClaimsName, out.ClaimsJSON = spec.Claims, data
	case spec.ClaimsFile != nil:
		fsys, name, err := onlyFile(h, spec.ClaimsFile, "claims file")
		if err != nil {
			return nil, err
		}
		p, err := claims.Load(fsys, name)
		if err != nil {
			return nil, err
		}
		if out.ClaimsJSON, err = json.Marshal(p); err != nil {
			return nil, err
		}
		out.ClaimsName = p.Name
	}
	return out, nil
}

// refSource is a claims profile's checkpoint as a Hub source
// (owner/name@revision; "" when the profile names none).
func refSource(r claims.Ref) string {
	switch {
	case r.Repo == "":
		return ""
	case r.Revision == "":
		return r.Repo
	}
	return r.Repo + "@" + r.Revision
}
