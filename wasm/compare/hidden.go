package compare

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// HiddenTol is report.HiddenTol.
type HiddenTol = report.HiddenTol

// DefaultHidden documents the default tolerances (see the package doc).
var DefaultHidden = report.DefaultHidden

// LayerStats is report.LayerStats.
type LayerStats = report.LayerStats

// RecordStats is report.RecordStats.
type RecordStats = report.RecordStats

// HiddenSummary is report.HiddenSummary.
type HiddenSummary = report.HiddenSummary

// HiddenResult is report.Hidden.
type HiddenResult = report.Hidden

// ListHidden maps record ids to file names of the *.safetensors in dir.
func ListHidden(fsys fs.FS, dir string) (map[string]string, error) {
	ents, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, &report.Error{Code: report.FileUnreadable, Subject: dir, Msg: err.Error()}
	}
	out := map[string]string{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".safetensors") {
			continue
		}
		id := strings.ReplaceAll(strings.TrimSuffix(e.Name(), ".safetensors"), "__", "/")
		out[id] = path.Join(dir, e.Name())
	}
	return out, nil
}

// Hidden compares the candidate's hidden states (cand, dir candDir) with the
// references (ref, dir refDir), matching records by id.
func Hidden(ref fs.FS, refDir string, cand fs.FS, candDir string, tol HiddenTol) (*HiddenResult, error) {
	refFiles, err := ListHidden(ref, refDir)
	if err != nil {
		return nil, err
	}
	candFiles, err := ListHidden(cand, candDir)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(refFiles))
	for id := range refFiles {
		ids = append(ids, id)
	}
	var candIDs []string
	for id := range candFiles {
		candIDs = append(candIDs, id)
	}
	return HiddenOf(ids, candIDs,
		func(id string) (*refs.Hidden, error) { return refs.ReadHidden(ref, refFiles[id]) },
		func(id string) (*refs.Hidden, error) {
			if candFiles[id] == "" {
				return nil, nil
			}
			return refs.ReadHidden(cand, candFiles[id])
		}, tol), nil
}

// HiddenOf compares the records ids, loading each side with a function (a
// nil state from loadCand means the candidate lacks the record); candIDs
// lists the candidate's records, to report extra ones. The browser passes
// loaders over HTTP and over states captured live.
func HiddenOf(ids, candIDs []string, loadRef, loadCand func(id string) (*refs.Hidden, error), tol HiddenTol) *HiddenResult {
	hc := NewHiddenComparer(tol)
	for _, id := range slices.Sorted(slices.Values(ids)) {
		r, rerr := loadRef(id)
		var cd *refs.Hidden
		var cerr error
		if rerr == nil {
			cd, cerr = loadCand(id)
		}
		hc.Record(id, r, rerr, cd, cerr)
	}
	for _, id := range candIDs {
		hc.Extra(id)
	}
	return hc.Result()
}

// HiddenComparer compares hidden states record by record as they come
// (a live capture compares each record when its answer arrives and keeps
// only the figures, so memory does not grow with the states). It is not
// safe for concurrent use.
type HiddenComparer struct {
	tol     HiddenTol
	res     *HiddenResult
	c       report.Collector
	inRef   map[string]bool
	byLayer map[int]*LayerStats
}

// NewHiddenComparer starts a comparison with the tolerances (zero: the
// defaults).
func NewHiddenComparer(tol HiddenTol) *HiddenComparer {
	if tol == (HiddenTol{}) {
		tol = DefaultHidden
	}
	return &HiddenComparer{tol: tol, res: &HiddenResult{Summary: HiddenSummary{MinCosine: 1, Tol: tol}},
		inRef: map[string]bool{}, byLayer: map[int]*LayerStats{}}
}

// Record compares one record: the reference's states r (or why they could
// not be read, refErr) with the candidate's cd (nil: the candidate lacks
// the record; or why they could not be read, candErr).
func (hc *HiddenComparer) Record(id string, r *refs.Hidden, refErr error, cd *refs.Hidden, candErr error) {
	res := hc.res
	hc.inRef[id] = true
	res.Summary.Records++
	rs := RecordStats{ID: id, Status: "ok"}
	fail := func(status, format string, a ...any) {
		rs.Status, rs.Detail = status, fmt.Sprintf(format, a...)
		hc.c.Addf(report.HiddenMismatch, report.Fail, id, nil, nil, "%s", rs.Detail)
	}
	switch {
	case refErr != nil:
		fail("unreadable", "reference unreadable: %v", refErr)
	case candErr != nil:
		fail("unreadable", "candidate unreadable: %v", candErr)
	case cd == nil:
		fail("missing", "the candidate has no hidden states for this record")
	case cd.ID != r.ID:
		fail("shape", "the candidate file's metadata id is %q", report.Clip(cd.ID, 80))
	case nonfinite(r) > 0:
		fail("unreadable", "the reference's hidden states hold %d NaN or infinite values: they cannot judge a candidate", nonfinite(r))
	default:
		if n := nonfinite(cd); n > 0 {
			hc.c.Addf(report.HiddenMismatch, report.Fail, id, n, 0, "the candidate's hidden states hold %d NaN or infinite values (its figures are shown as the worst: cosine −1, errors the largest float64)", n)
		}
		compareRecord(&rs, r, cd, hc.tol, fail)
	}
	if rs.Status == "ok" || rs.Status == "drift" {
		res.Summary.Compared++
		for _, ls := range rs.Layers {
			res.Summary.MinCosine = math.Min(res.Summary.MinCosine, ls.Cosine)
			res.Summary.MaxRelL2 = math.Max(res.Summary.MaxRelL2, ls.RelL2)
			b := hc.byLayer[ls.Layer]
			if b == nil {
				b = &LayerStats{Layer: ls.Layer, Cosine: 1, OK: true}
				hc.byLayer[ls.Layer] = b
			}
			b.Cosine = math.Min(b.Cosine, ls.Cosine)
			b.RelL2 = math.Max(b.RelL2, ls.RelL2)
			b.NMSE = math.Max(b.NMSE, ls.NMSE)
			b.MaxAbs = math.Max(b.MaxAbs, ls.MaxAbs)
			b.OK = b.OK && ls.OK
		}
	}
	if rs.Status != "ok" {
		res.Summary.Failed++
	}
	res.Records = append(res.Records, rs)
}

// Extra notes a record of the candidate's; one the reference lacks is
// reported (info).
func (hc *HiddenComparer) Extra(id string) {
	if !hc.inRef[id] {
		hc.res.Summary.Extra++
		hc.c.Addf(report.HiddenMismatch, report.Info, id, nil, nil, "the candidate has a record the reference does not")
	}
}

// Result ends the comparison: records worst first, layers in order.
func (hc *HiddenComparer) Result() *HiddenResult {
	res := hc.res
	res.Summary.ByLayer = res.Summary.ByLayer[:0]
	for _, b := range hc.byLayer {
		res.Summary.ByLayer = append(res.Summary.ByLayer, *b)
	}
	sort.Slice(res.Summary.ByLayer, func(i, j int) bool { return res.Summary.ByLayer[i].Layer < res.Summary.ByLayer[j].Layer })
	sort.SliceStable(res.Records, func(i, j int) bool {
		a, b := worstCos(res.Records[i]), worstCos(res.Records[j])
		if a != b {
			return a < b
		}
		return res.Records[i].ID < res.Records[j].ID // records may come in any order
	})
	res.Outcome = hc.c.Outcome()
	return res
}

// consistent reports whether h's shape, layers and data agree (states
// captured live are not checked by ReadHidden).
func consistent(h *refs.Hidden) bool {
	if len(h.Shape) != 2 && len(h.Shape) != 3 {
		return false
	}
	n := 1
	for _, d := range h.Shape {
		if d < 0 || (d > 0 && n > math.MaxInt32/d) {
			return false
		}
		n *= d
	}
	return n == len(h.Data) && h.Shape[0] == len(h.Layers) && h.H() > 0
}

// nonfinite counts the NaN and infinite values of h's states (ReadHidden
// counted them; states captured live are counted here).
func nonfinite(h *refs.Hidden) int {
	if h.Nonfinite > 0 {
		return h.Nonfinite
	}
	n := 0
	for _, v := range h.Data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			n++
		}
	}
	return n
}

func worstCos(r RecordStats) float64 {
	if r.Status != "ok" && r.Status != "drift" {
		return -2
	}
	if r.Worst == nil {
		return 1
	}
	return r.Worst.Cosine
}

func compareRecord(rs *RecordStats, r, cd *refs.Hidden, tol HiddenTol, fail func(status, format string, a ...any)) {
	if len(r.InputIDs) != len(cd.InputIDs) {
		fail("tokens", "token ids differ: %d in the reference, %d in the candidate", len(r.InputIDs), len(cd.InputIDs))
		return
	}
	for i := range r.InputIDs {
		if r.InputIDs[i] != cd.InputIDs[i] {
			fail("tokens", "token ids differ at position %d: %d in the reference, %d in the candidate", i, r.InputIDs[i], cd.InputIDs[i])
			return
		}
	}
	for _, h := range []*refs.Hidden{r, cd} {
		if !consistent(h) {
			fail("shape", "hidden states of shape %v hold %d values (and %d layer numbers): not a consistent capture", h.Shape, len(h.Data), len(h.Layers))
			return
		}
	}
	if r.H() != cd.H() {
		fail("shape", "hidden size %d in the reference, %d in the candidate", r.H(), cd.H())
		return
	}
	lastOnly := r.T() != cd.T()
	if lastOnly && r.T() != 1 && cd.T() != 1 {
		fail("shape", "%d positions in the reference, %d in the candidate", r.T(), cd.T())
		return
	}
	candLayer := map[int]int{}
	for i, l := range cd.Layers {
		candLayer[l] = i
	}
	var missing []string
	var bad []string
	for i, l := range r.Layers {
		j, ok := candLayer[l]
		if !ok {
			missing = append(missing, fmt.Sprint(l))
			continue
		}
		var x, y []float32
		if lastOnly {
			x, y = r.Last(i), cd.Last(j)
		} else {
			x, y = r.Layer(i), cd.Layer(j)
		}
		ls := Stats(x, y)
		ls.Layer = l
		ls.OK = ls.Cosine >= tol.MinCosine && ls.RelL2 <= tol.MaxRelL2
		if !ls.OK {
			bad = append(bad, fmt.Sprintf("%d (cos %.5f, rel L2 %.3g)", l, ls.Cosine, ls.RelL2))
		}
		rs.Layers = append(rs.Layers, ls)
		if rs.Worst == nil || ls.Cosine < rs.Worst.Cosine {
			w := ls
			rs.Worst = &w
		}
	}
	if len(missing) > 0 {
		fail("shape", "the candidate lacks layers %s", strings.Join(missing, ", "))
		return
	}
	if len(bad) > 0 {
		rs.Status = "drift"
		rs.Detail = fmt.Sprintf("layers beyond tolerance (cos ≥ %.4g, rel L2 ≤ %.3g): %s", tol.MinCosine, tol.MaxRelL2, strings.Join(bad, "; "))
		fail("drift", "%s", rs.Detail)
	}
}

// Stats compares two equally long vectors.
func Stats(ref, cand []float32) LayerStats {
	var dot, rr, cc, dd, mx float64
	for i := range ref {
		a, b := float64(ref[i]), float64(cand[i])
		dot += a * b
		rr += a * a
		cc += b * b
		d := b - a
		dd += d * d
		mx = math.Max(mx, math.Abs(d))
	}
	s := LayerStats{MaxAbs: mx}
	switch {
	case rr > 0 && cc > 0:
		s.Cosine = dot / math.Sqrt(rr*cc)
	case rr == 0 && cc == 0:
		s.Cosine = 1
	}
	if rr > 0 {
		s.NMSE = dd / rr
		s.RelL2 = math.Sqrt(dd / rr)
	} else if dd > 0 {
		s.NMSE, s.RelL2 = math.MaxFloat64, math.MaxFloat64 // JSON has no infinity
	}
	if math.IsNaN(s.Cosine) || math.IsInf(s.Cosine, 0) {
		s.Cosine = -1
	}
	// NaN or ±Inf in either vector: JSON has no such numbers, and the
	// comparison's figures are as bad as they get.
	for _, p := range []*float64{&s.NMSE, &s.RelL2, &s.MaxAbs} {
		if math.IsNaN(*p) || math.IsInf(*p, 0) {
			*p = math.MaxFloat64
		}
	}
	if math.IsNaN(dot) || math.IsInf(dot, 0) || math.IsNaN(rr+cc+dd) || math.IsInf(rr+cc+dd, 0) {
		s.Cosine, s.NMSE, s.RelL2, s.MaxAbs = -1, math.MaxFloat64, math.MaxFloat64, math.MaxFloat64
	}
	return s
}
