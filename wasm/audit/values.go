package audit

import (
	"context"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// Diagonal is the diagonal spectrum of a pair (spectral.DiagonalSpectrum).
type Diagonal = spectral.Diagonal

func (a *auditor) values(ctx context.Context) error {
	var todo []*Matrix
	var total int64
	for _, m := range a.res.Matrices {
		if m.Skipped == "" {
			todo = append(todo, m)
			ta, _, _ := a.ck.Tensor(a.keys[m][0])
			tb, _, _ := a.ck.Tensor(a.keys[m][1])
			total += ta.Bytes() + tb.Bytes()
		}
	}
	if a.opt.InFileOrder {
		sort.SliceStable(todo, func(i, j int) bool { return a.lessInFile(todo[i], todo[j]) })
	} else {
		// Largest pairs first, so that no worker is left alone with a big one at the end.
		sort.SliceStable(todo, func(i, j int) bool { return todo[i].Params > todo[j].Params })
	}
	phase := string(a.res.Summary.Mode) + " audit"
	meter := progress.NewMeter(phase, total, a.opt.Progress)
	var err error
	if a.opt.Remote != nil {
		err = a.checkRemote(ctx, todo, meter)
	} else {
		err = a.checkLocal(ctx, todo, meter, func(_ *Matrix, fs []report.Finding) { a.c.Findings = append(a.c.Findings, fs...) })
	}
	meter.Finish()
	if err != nil {
		return err
	}
	a.aggregateRank()
	return nil
}

// checkLocal checks the pairs in todo with opt.Workers goroutines; done is
// called under a lock as each pair finishes.
func (a *auditor) checkLocal(ctx context.Context, todo []*Matrix, meter *progress.Meter, done func(*Matrix, []report.Finding)) error {
	workers := a.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(1, len(todo)))
	jobs := make(chan *Matrix)
	dealt := make(chan struct{}) // closed once every pair is dealt
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &pairState{}
			for {
				if w > 0 && w == workers-1 && a.opt.Reserved != nil {
					a.waitReserved(ctx, dealt)
				}
				m, ok := <-jobs
				if !ok {
					return
				}
				fs := a.checkPair(st, m, meter)
				mu.Lock()
				done(m, fs)
				mu.Unlock()
			}
		}()
	}
loop:
	for _, m := range todo {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		if a.opt.Yield != nil {
			if err := a.opt.Yield(); err != nil {
				firstErr = err
				break loop
			}
		}
		jobs <- m
	}
	close(jobs)
	close(dealt)
	wg.Wait()
	return firstErr
}

// waitReserved returns once no core is reserved (Options.Reserved), every
// pair is dealt or ctx is done.
func (a *auditor) waitReserved(ctx context.Context, dealt <-chan struct{}) {
	for {
		ch := a.opt.Reserved()
		if ch == nil {
			return
		}
		select {
		case <-ch:
		case <-dealt:
			return
		case <-ctx.Done():
			return
		}
	}
}

// pairState holds a worker's reusable buffers.
type pairState struct {
	bufA, bufB []byte
	fa, fb     []float32 // decoded factors, for the probes
	row        []float32
	ga, gb     *spectral.Gram
}

func (a *auditor) checkPair(st *pairState, m *Matrix, meter *progress.Meter) []report.Finding {
	var c report.Collector
	ta, ra, _ := a.ck.Tensor(a.keys[m][0])
	tb, rb, _ := a.ck.Tensor(a.keys[m][1])
	sa := streamer{rd: ra, t: ta, buf: &st.bufA, add: meter.Add, chunk: a.opt.ReadChunk}
	sb := streamer{rd: rb, t: tb, buf: &st.bufB, add: meter.Add, chunk: a.opt.ReadChunk}
	// Small pairs are read whole (one read per factor), large ones streamed;
	// a quick audit with ReadChunk streams them all, in its pieces.
	whole := ta.Bytes()+tb.Bytes() <= WholeReadBytes && !(a.opt.Mode == report.ModeQuick && a.opt.ReadChunk > 0)
	// In file order, the factor whose bytes come first is read first:
	// the digest hashes the reads as they pass (see Options.InFileOrder).
	bFirst := a.opt.InFileOrder && ra == rb && tb.Offset < ta.Offset
	// da, db are the whole factors' bytes, only read from here on: views
	// of bytes the source holds already (the span a browser pool worker
	// was handed: no copy; not for the probes, which keep st's buffers),
	// or read into st's buffers.
	var da, db []byte
	viewed := false
	if whole && a.opt.Mode != report.ModeRandomized {
		da, db, viewed = viewPair(sa, sb)
	}
	if whole && !viewed {
		var errA, errB error
		inOrder(bFirst, func() error {
			st.bufA, errA = sa.read(0, ta.Bytes())
			return errA
		}, func() error {
			st.bufB, errB = sb.read(0, tb.Bytes())
			return errB
		})
		if errA != nil {
			m.Skipped = "unreadable"
			return findings.Of(errA, ta.Name)
		}
		if errB != nil {
			m.Skipped = "unreadable"
			return findings.Of(errB, tb.Name)
		}
		da, db = st.bufA, st.bufB
	}
	r := m.Rank
	var nfA, nfB int
	var ssA, ssB float64
	if a.opt.Mode == report.ModeRandomized && probesPay() && 4*(int64(r)*int64(m.In)+int64(m.Out)*int64(r)) <= MaxProbeDecode {
		done, fs, err := a.probePair(st, m, sa, sb, whole, bFirst)
		if err != nil {
			m.Skipped = "unreadable"
			return findings.Of(err, m.Module)
		}
		if done {
			return fs
		}
	}
	// The exact route's buffers must be justified by the factors' bytes.
	var limit error
	if a.opt.Mode != report.ModeQuick {
		limit = spectral.GramAllowed(r, ta.Bytes()+tb.Bytes())
	}
	var err, wideLimit error
	switch {
	case (a.opt.Mode == report.ModeQuick || limit != nil) && whole:
		nfA, ssA = dtype.Scan(ta.DType, da, &st.row)
		nfB, ssB = dtype.Scan(tb.DType, db, &st.row)
	case a.opt.Mode == report.ModeQuick || limit != nil:
		err = inOrder(bFirst, func() (err error) {
			nfA, ssA, err = sa.scan(&st.row)
			return err
		}, func() (err error) {
			nfB, ssB, err = sb.scan(&st.row)
			return err
		})
	default:
		if st.ga == nil || st.ga.N != r {
			st.ga, st.gb = spectral.NewGram(r), spectral.NewGram(r)
		} else {
			st.ga.Reset()
			st.gb.Reset()
		}
		if whole {
			nfA, ssA = st.ga.FeedColumns(ta.DType, da, r, m.In, &st.row, a.opt.Yield)
			nfB, ssB = st.gb.FeedRows(tb.DType, db, m.Out, r, a.opt.Yield)
		} else {
			err = inOrder(bFirst, func() (err error) {
				nfA, ssA, err = sa.feedColumns(st.ga, r, m.In, &st.row, a.opt.Yield)
				return err
			}, func() (err error) {
				nfB, ssB, err = sb.feedRows(st.gb, m.Out, r, a.opt.Yield)
				return err
			})
		}
	}
	if err == nil && a.opt.Mode != report.ModeQuick && limit == nil {
		// A factor with values of 1.8·10¹⁹ or more overflows the float32
		// Gram (its trace is +Inf with every value finite), one whose
		// values are all tiny loses them as subnormals (dtype.Wide): its
		// Gram is taken again in float64 (spectral.Gram.AddWide).
		// Beyond spectral.MaxWideWork the factor is only scanned again
		// (dtype.Scan sums in float64 where float32 fails): its norm is
		// right, its spectrum not checked.
		var wideA, wideB []byte
		if whole {
			wideA, wideB = da, db
		}
		if nfA == 0 && dtype.Wide(ssA) {
			if wideLimit = spectral.WideAllowed(r, int64(m.In)); wideLimit == nil {
				ssA, err = sa.feedWide(st.ga, r, m.In, true, wideA)
			} else {
				ssA, err = sa.rescan(wideA, &st.row)
			}
		}
		if err == nil && nfB == 0 && dtype.Wide(ssB) {
			if werr := spectral.WideAllowed(r, int64(m.Out)); werr == nil {
				ssB, err = sb.feedWide(st.gb, m.Out, r, false, wideB)
			} else {
				wideLimit = werr
				ssB, err = sb.rescan(wideB, &st.row)
			}
		}
	}
	if !whole && cap(st.bufA) > StreamChunk {
		st.bufA, st.bufB = nil, nil // a worker keeps no more than a chunk
	}
	if err != nil {
		m.Skipped = "unreadable"
		return findings.Of(err, m.Module)
	}
	m.NormA, m.NormB, m.Nonfinite = math.Sqrt(ssA), math.Sqrt(ssB), nfA+nfB
	if nfA > 0 {
		c.Addf(report.ValuesNonfinite, report.Fail, ta.Name, nfA, 0, "%d NaN or infinite values in lora_A", nfA)
	}
	if nfB > 0 {
		c.Addf(report.ValuesNonfinite, report.Fail, tb.Name, nfB, 0, "%d NaN or infinite values in lora_B", nfB)
	}
	if wideLimit != nil && m.Nonfinite == 0 {
		c.Addf(report.LimitExceeded, report.Fail, m.Module, nil, spectral.MaxWideWork,
			"singular values and SVD form not checked (values scanned, norms taken): the factors' values are beyond float32's range for the Gram route, and %v", wideLimit)
		return c.Findings
	}
	if limit != nil && a.opt.Mode != report.ModeQuick {
		c.Addf(report.LimitExceeded, report.Fail, m.Module, r, spectral.MaxGramRank,
			"singular values and SVD form not checked (values scanned, norms taken): %v", limit)
		return c.Findings
	}
	if a.opt.Mode == report.ModeQuick || m.Nonfinite > 0 {
		return c.Findings
	}
	m.Method = "gram"
	ga, gb := st.ga.Sym(), st.gb.Sym()
	form := spectral.FormOf(ga, gb).Deviation()
	// The diagonal shortcut (spectral.DiagonalSpectrum): for factors in SVD
	// form the Grams are diagonal within a Gershgorin bound, and the
	// eigensolver runs only when that bound is not tight enough — or when
	// it could change a figure the audit judges.
	if d, ok := spectral.DiagonalSpectrum(ga, gb, m.Scaling); ok && d.Accepts(spectral.DiagonalTolerance) && a.diagonalDecides(m, d) {
		a.setSpectrum(&c, m, d.Sigma, form, &d.Bound)
		if m.Fro >= 0 {
			m.Fro = d.Fro
		}
	} else {
		sigma, err := spectral.SingularValues(ga, gb, m.Scaling)
		if err != nil {
			c.Addf(report.RankDeficient, report.Fail, m.Module, nil, nil, "spectrum not computed: %v", err)
			return c.Findings
		}
		a.setSpectrum(&c, m, sigma, form, nil)
	}
	if form > a.opt.Tol.Form {
		c.Addf(report.FactorForm, report.Warn, m.Module, fin(form), a.opt.Tol.Form, "A·Aᵀ and Bᵀ·B are not one diagonal matrix (deviation %.3g > %.3g): the factors are not A = √S·Vᵀ, B = U·√S", form, a.opt.Tol.Form)
	}
	return c.Findings
}

// setSpectrum sets a pair's spectrum figures and judges its rank. Figures
// that are not finite in float64 (a huge scaling, overflowing factors) are
// kept out of the JSON (−1, as report.Fin) and said so.
func (a *auditor) setSpectrum(c *report.Collector, m *Matrix, sigma []float64, form float64, bound *float64) {
	bad := 0
	for i, x := range sigma {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			sigma[i] = -1
			bad++
		}
	}
	m.Sigma = sigma
	m.Fro = spectral.FroFromSigma(sigma)
	if bad > 0 || math.IsInf(m.Fro, 0) {
		c.Addf(report.ValuesNonfinite, report.Fail, m.Module, bad, 0, "the spectrum of s·B·A is not finite in float64 (scaling %.3g, ‖A‖_F %.3g, ‖B‖_F %.3g): %d singular values overflow", m.Scaling, fin(m.NormA), fin(m.NormB), bad)
		m.Fro = -1
		m.NumRank = 0
	} else {
		m.NumRank = spectral.NumericalRank(sigma, m.Out, m.In)
	}
	f := fin(form)
	m.FormDev = &f
	m.SigmaBound = nil // a pair checked again (Session) starts afresh
	if bound != nil {
		b := fin(*bound)
		m.SigmaBound = &b
	}
	r := m.Rank
	tol := spectral.RankTolerance(sigma, m.Out, m.In)
	if m.Large && m.NumRank < r {
		c.Addf(report.RankDeficient, report.Fail, m.Module, m.NumRank, r, "numerical rank %d < r = %d (σ below %.3g counted as zero)", m.NumRank, r, tol)
	} else if !m.Large && m.NumRank < min(m.Out, m.In, r) {
		c.Addf(report.RankDeficient, report.Info, m.Module, m.NumRank, min(m.Out, m.In, r), "numerical rank %d, below the %d its smaller side allows (info: the matrix is not larger than r in both dimensions)", m.NumRank, min(m.Out, m.In, r))
	}
}

// probePair runs the randomized check; it returns done when the probes
// established the form (the pair's figures are then set), or when values
// were not finite.
func (a *auditor) probePair(st *pairState, m *Matrix, sa, sb streamer, whole, bFirst bool) (bool, []report.Finding, error) {
	var c report.Collector
	r := m.Rank
	if cap(st.fa) < r*m.In {
		st.fa = make([]float32, r*m.In)
	}
	if cap(st.fb) < m.Out*r {
		st.fb = make([]float32, m.Out*r)
	}
	fa, fb := st.fa[:r*m.In], st.fb[:m.Out*r]
	var nfA, nfB int
	if whole {
		nfA, _ = dtype.Decode32(sa.t.DType, st.bufA, fa)
		nfB, _ = dtype.Decode32(sb.t.DType, st.bufB, fb)
	} else if err := inOrder(bFirst, func() (err error) {
		nfA, err = sa.decode(fa)
		return err
	}, func() (err error) {
		nfB, err = sb.decode(fb)
		return err
	}); err != nil {
		return false, nil, err
	}
	if nfA+nfB > 0 {
		return false, nil, nil // the exact path reports them
	}
	seed := uint64(0)
	for _, ch := range m.Module {
		seed = seed*131 + uint64(ch)
	}
	p := spectral.Probe(fa, fb, r, m.In, m.Out, m.Scaling, a.opt.Probes, seed, a.opt.Yield)
	if !p.Accepts(a.opt.Tol.Form) || dtype.Wide(p.NormA*p.NormA) || dtype.Wide(p.NormB*p.NormB) {
		// Rejected, or figures summed in float32 that overflowed or lost
		// their digits (dtype.Wide): the exact route decides.
		return false, nil, nil
	}
	m.NormA, m.NormB = p.NormA, p.NormB
	m.Method = "probes"
	a.setSpectrum(&c, m, p.Sigma, max(p.BoundA, p.BoundB, p.Diag), &p.SigmaBound)
	return true, c.Findings, nil
}

// inOrder runs a then b, or b then a when bFirst, stopping at the first
// error.
func inOrder(bFirst bool, a, b func() error) error {
	if bFirst {
		a, b = b, a
	}
	if err := a(); err != nil {
		return err
	}
	return b()
}

func (a *auditor) aggregateRank() {
	if a.opt.Mode == report.ModeQuick {
		return
	}
	n := 0
	for _, m := range a.res.Matrices {
		if m.Sigma != nil && !m.Large && m.NumRank == min(m.Out, m.In, m.Rank) {
			n++
		}
	}
	if n > 0 {
		a.c.Addf(report.RankDeficient, report.Info, "adapter_model", n, nil, "%d matrices have a side not larger than r; their numerical rank equals that side, the most it can be", n)
	}
}

// diagonalDecides reports whether the diagonal spectrum d decides what the
// eigensolver's would: every σᵢ is within d.Bound of d.Sigma[i], so a
// figure is decided when it is on the same side of its threshold at both
// ends of the bound — the numerical rank's σ₁·max(max(out, in)·2⁻²³, 2⁻¹⁰)
// and, when the extraction report lists the pair's singular values, each
// one's tolerance against the report. A figure the bound leaves undecided
// sends the pair to the eigensolver.
func (a *auditor) diagonalDecides(m *Matrix, d Diagonal) bool {
	b := d.Bound
	sig := d.Sigma
	if len(sig) == 0 || sig[0] == 0 {
		return true
	}
	tol := spectral.RankTolerance(sig, m.Out, m.In) // ∝ σ₁
	for _, x := range sig {
		above, below := x*(1-b) > tol*(1+b), x*(1+b) <= tol*(1-b)
		if !above && !below {
			return false
		}
	}
	ref := a.reportSigma(m.Module)
	if len(ref) == 0 {
		return true
	}
	t := a.opt.Tol
	for j := 0; j < len(ref) && j < len(sig); j++ {
		allowed := t.SigmaRel*math.Abs(ref[j]) + t.SigmaAbs*math.Abs(ref[0])
		lo, hi := sig[j]*(1-b), sig[j]*(1+b)
		// The deviation |σ − ref| over σ ∈ [lo, hi]: its largest value is at
		// an end, its smallest 0 when ref is inside.
		dmax := max(math.Abs(lo-ref[j]), math.Abs(hi-ref[j]))
		dmin := 0.0
		if ref[j] < lo || ref[j] > hi {
			dmin = min(math.Abs(lo-ref[j]), math.Abs(hi-ref[j]))
		}
		if dmin <= allowed && dmax > allowed {
			return false
		}
	}
	return true
}

// reportSigma is the extraction report's singular values for module (nil
// without a report or without them), or what Session.CheckRef gives.
func (a *auditor) reportSigma(module string) []float64 {
	if a.refFor != "" && module == a.refFor {
		return a.ref
	}
	if a.rep == nil {
		return nil
	}
	a.repOnce.Do(func() {
		a.repSigma = make(map[string][]float64, len(a.rep.Matrices))
		for i := range a.rep.Matrices {
			x := &a.rep.Matrices[i]
			a.repSigma[x.Module] = x.SingularValues
		}
	})
	return a.repSigma[module]
}

// probesPay reports whether the randomized probes cost less than the exact
// Grams with the kernels in use. The probes take 2·k·q = 32 multiply-adds
// per factor element, the Gram r/2 (128 at r = 256); natively the Gram
// kernel is SIMD (8 or 16 lanes, at ~80% of the FMA peak) while the probes'
// loops are portable Go, so the Grams are the cheaper route there and a
// randomized audit takes them for every pair (method "gram"): it is then
// the exact audit, never slower. In the browser the probes have WebAssembly
// SIMD kernels and the Gram the portable loop: the probes pay.
func probesPay() bool {
	_, gramPortable := spectral.GramKernels.Current()
	_, probesPortable := spectral.ProbeKernels.Current()
	return gramPortable || !probesPortable
}

// lessInFile orders pairs by where their first tensor lies: by file name,
// then by offset.
func (a *auditor) lessInFile(m, n *Matrix) bool {
	fm, om := a.firstByte(m)
	fn, on := a.firstByte(n)
	if fm != fn {
		return fm < fn
	}
	return om < on
}

// firstByte is the file and offset of a pair's first tensor byte.
func (a *auditor) firstByte(m *Matrix) (string, int64) {
	ta, ra, _ := a.ck.Tensor(a.keys[m][0])
	tb, rb, _ := a.ck.Tensor(a.keys[m][1])
	switch {
	case ra == nil || rb == nil:
		return "", 0
	case ra.Name < rb.Name || (ra == rb && ta.Offset <= tb.Offset):
		return ra.Name, ta.Offset
	}
	return rb.Name, tb.Offset
}
