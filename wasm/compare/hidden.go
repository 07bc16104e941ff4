// Package compare checks a server's output against the references: hidden
// states record by record and layer by layer, and answers (choices, logits,
// probabilities, accuracy on known answers).
//
// # Hidden-state tolerances
//
// The references are computed at full precision; a faithful server runs the
// same weights in bf16, whose 8 significant bits give each activation a
// relative rounding error up to 2⁻⁸ ≈ 3.9·10⁻³. Two defaults follow the
// field's practice: the relative L2 error ‖c − r‖/‖r‖ of a layer must stay
// within 1.6·10⁻² (torch.testing's rtol for bf16), and the cosine similarity
// of the layer's states must stay at or above 1 − 10⁻³ (the bar vLLM's tests
// use for hidden states). NMSE (‖c − r‖²/‖r‖²) and max |Δ| are reported, not
// judged. Token ids must match exactly before any number is compared.
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

// HiddenTol are the hidden-state tolerances.
type HiddenTol struct {
	MinCosine float64 `json:"min_cosine"`
	MaxRelL2  float64 `json:"max_rel_l2"`
}

// DefaultHidden documents the default tolerances (see the package doc).
var DefaultHidden = HiddenTol{MinCosine: 1 - 1e-3, MaxRelL2: 1.6e-2}

// LayerStats compares one captured layer.
type LayerStats struct {
	Layer  int     `json:"layer"`
	Cosine float64 `json:"cosine"`
	NMSE   float64 `json:"nmse"`
	MaxAbs float64 `json:"max_abs"`
	RelL2  float64 `json:"rel_l2"`
	OK     bool    `json:"ok"`
}

// RecordStats compares one record.
type RecordStats struct {
	ID     string       `json:"id"`
	Status string       `json:"status"` // ok | drift | missing | tokens | shape | unreadable
	Detail string       `json:"detail,omitempty"`
	Layers []LayerStats `json:"layers,omitempty"`
	Worst  *LayerStats  `json:"worst,omitempty"` // the layer with the lowest cosine
}

// HiddenSummary totals a comparison.
type HiddenSummary struct {
	Records   int       `json:"records"`
	Compared  int       `json:"compared"`
	Failed    int       `json:"failed"`
	Extra     int       `json:"extra"`
	MinCosine float64   `json:"min_cosine"`
	MaxRelL2  float64   `json:"max_rel_l2"`
	Tol       HiddenTol `json:"tolerances"`
	// Per captured layer, the worst cosine and relative L2 over records.
	ByLayer []LayerStats `json:"by_layer"`
}

// HiddenResult is the outcome, in the audit's shape.
type HiddenResult struct {
	report.Outcome
	Summary HiddenSummary `json:"summary"`
	Records []RecordStats `json:"records"` // worst first
}

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
	if tol == (HiddenTol{}) {
		tol = DefaultHidden
	}
	res := &HiddenResult{Summary: HiddenSummary{MinCosine: 1, Tol: tol}}
	var c report.Collector
	ids = slices.Sorted(slices.Values(ids))
	inRef := map[string]bool{}
	byLayer := map[int]*LayerStats{}
	for _, id := range ids {
		inRef[id] = true
		res.Summary.Records++
		rs := RecordStats{ID: id, Status: "ok"}
		fail := func(status, format string, a ...any) {
			rs.Status, rs.Detail = status, fmt.Sprintf(format, a...)
			c.Addf(report.HiddenMismatch, report.Fail, id, nil, nil, "%s", rs.Detail)
		}
		r, err := loadRef(id)
		if err != nil {
			fail("unreadable", "reference unreadable: %v", err)
		} else if cd, err := loadCand(id); err != nil {
			fail("unreadable", "candidate unreadable: %v", err)
		} else if cd == nil {
			fail("missing", "the candidate has no hidden states for this record")
		} else if cd.ID != r.ID {
			fail("shape", "the candidate file's metadata id is %q", cd.ID)
		} else {
			compareRecord(&rs, r, cd, tol, fail)
		}
		if rs.Status == "ok" || rs.Status == "drift" {
			res.Summary.Compared++
			for i := range rs.Layers {
				ls := rs.Layers[i]
				res.Summary.MinCosine = math.Min(res.Summary.MinCosine, ls.Cosine)
				res.Summary.MaxRelL2 = math.Max(res.Summary.MaxRelL2, ls.RelL2)
				b := byLayer[ls.Layer]
				if b == nil {
					b = &LayerStats{Layer: ls.Layer, Cosine: 1, OK: true}
					byLayer[ls.Layer] = b
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
	for _, id := range candIDs {
		if !inRef[id] {
			res.Summary.Extra++
			c.Addf(report.HiddenMismatch, report.Info, id, nil, nil, "the candidate has a record the reference does not")
		}
	}
	for _, b := range byLayer {
		res.Summary.ByLayer = append(res.Summary.ByLayer, *b)
	}
	sort.Slice(res.Summary.ByLayer, func(i, j int) bool { return res.Summary.ByLayer[i].Layer < res.Summary.ByLayer[j].Layer })
	sort.SliceStable(res.Records, func(i, j int) bool { return worstCos(res.Records[i]) < worstCos(res.Records[j]) })
	res.Outcome = c.Outcome()
	return res
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
	if math.IsNaN(s.Cosine) {
		s.Cosine = -1
	}
	return s
}
