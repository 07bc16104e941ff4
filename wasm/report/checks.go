package report

import (
	"errors"
	"fmt"
	"math"
)

// The result types of the checks besides the audit (audit.go): a rebuild
// against the checkpoints, a block of s·B·A, a hidden-state comparison,
// an answers comparison and a batch of decisions. They are the contract
// between the engine, the CLI's --json output and the pages, so they
// depend on nothing computational; the packages that compute them
// (rebuild, compare, decision) alias them.

// RebuildMatrix holds one module's rebuild figures (rebuild.Matrix).
type RebuildMatrix struct {
	Module          string  `json:"module"`
	Out             int     `json:"out"`
	In              int     `json:"in"`
	Large           bool    `json:"large"`
	DeltaFro        float64 `json:"delta_fro"`
	ResidualFro     float64 `json:"residual_fro"`
	NoiseFro        float64 `json:"noise_fro"`
	ResidualToNoise float64 `json:"residual_to_noise"`
	RebuiltRelError float64 `json:"rebuilt_rel_error"`
	// A sampled rebuild's: the figures above are then estimates from
	// Rows of the matrix's Units stored rows (rows of out × in, or of
	// in × out with fan_in_fan_out), with their intervals ([low, high], at
	// the level Rebuild.Sample states). Rows = Units: every row was read
	// and the figures are exact (the interval is the point).
	Rows              int         `json:"rows_sampled,omitempty"`
	Units             int         `json:"rows_total,omitempty"`
	ResidualToNoiseCI *[2]float64 `json:"residual_to_noise_interval,omitempty"`
	RebuiltRelErrorCI *[2]float64 `json:"rebuilt_rel_error_interval,omitempty"`
}

// Rebuild is the rebuild check's outcome (rebuild.Result).
type Rebuild struct {
	Outcome
	Compared  int              `json:"tensors_compared"`
	Differing []string         `json:"tensors_differing"`
	Matrices  []*RebuildMatrix `json:"matrices"`
	// Mode is full (every row of every module) or sampled (RebuildSample).
	Mode string `json:"mode,omitempty"`
	// Plan is what the rebuild was to read, computed before it started.
	Plan *RebuildPlan `json:"plan,omitempty"`
	// BytesRead is what it read from the two checkpoints after planning
	// (the identity check's heads and the rows), as it asked for them.
	BytesRead int64 `json:"bytes_read,omitempty"`
	// Sample says how a sampled rebuild chose its rows and how sure its
	// estimates are.
	Sample *RebuildSample `json:"sample,omitempty"`
	// Provenance says what was checked, with what and when.
	Provenance *Provenance `json:"provenance,omitempty"`
	// Bounds are the thresholds the figures were judged against.
	Bounds *RebuildBounds `json:"bounds,omitempty"`
}

// RebuildBounds are a rebuild's thresholds: residual/noise above Max
// fails (below Min, for a large matrix, is better than claimed: info);
// a rebuilt relative error above RelMax fails (0: not bounded).
type RebuildBounds struct {
	ResidualToNoiseMin float64 `json:"residual_to_noise_min,omitempty"`
	ResidualToNoiseMax float64 `json:"residual_to_noise_max"`
	RebuiltRelErrorMax float64 `json:"rebuilt_rel_error_max,omitempty"`
	// From says where they come from: a claims profile, or the default.
	From string `json:"from"`
}

// The rebuild's modes.
const (
	RebuildFull    = "full"
	RebuildSampled = "sampled"
)

// RebuildPlan is what a rebuild reads, known from the headers before it
// starts: the checkpoints' bytes (Bytes = IdentityBytes + RowBytes, both
// checkpoints together) are what MaxBytes bounds; the adapter's are the
// factors the products need.
type RebuildPlan struct {
	Mode          string `json:"mode"`
	Modules       int    `json:"modules"`
	RowsPerModule int    `json:"rows_per_module,omitempty"` // sampled
	Rows          int64  `json:"rows"`                      // rows read per checkpoint, all modules
	IdentityReads int    `json:"identity_reads"`            // tensor heads, both checkpoints
	IdentityBytes int64  `json:"identity_bytes"`
	RowBytes      int64  `json:"row_bytes"`
	Bytes         int64  `json:"bytes"`
	MaxBytes      int64  `json:"max_bytes,omitempty"` // 0: no bound
	AdapterBytes  int64  `json:"adapter_bytes"`
}

// String is the plan in one line (the CLI shows it on stderr before the
// rebuild starts).
func (p *RebuildPlan) String() string {
	what := "every row of"
	if p.Mode == RebuildSampled {
		what = fmt.Sprintf("%d rows of each of", p.RowsPerModule)
	}
	bound := ""
	if p.MaxBytes > 0 {
		bound = fmt.Sprintf(" (at most %s)", MB(p.MaxBytes))
	}
	return fmt.Sprintf("rebuild plan: %s %d modules: %s from the two checkpoints%s — %d tensor heads (%s) and %d rows from each (%s); %s of the adapter's factors",
		what, p.Modules, MB(p.Bytes), bound, p.IdentityReads, MB(p.IdentityBytes), p.Rows, MB(p.RowBytes), MB(p.AdapterBytes))
}

// MB writes a byte count in MB (10⁶ bytes), with the exact count below 1 MB.
func MB(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// RebuildSample describes a sampled rebuild.
type RebuildSample struct {
	RowsPerModule int `json:"rows_per_module"`
	// Seed chose the rows (the same seed and inputs choose the same rows).
	Seed uint64 `json:"seed"`
	// Estimator names how the figures and intervals were computed
	// (package rebuild's doc says why).
	Estimator string `json:"estimator"`
	// Confidence is the simultaneous level of all the intervals together;
	// Level that of each one (Bonferroni over Intervals of them).
	Confidence float64 `json:"confidence"`
	Level      float64 `json:"level"`
	Intervals  int     `json:"intervals"`
	// Decided and Undecided count the modules whose intervals did and did
	// not settle every bound of the claims.
	Decided   int `json:"decided"`
	Undecided int `json:"undecided"`
}

// Block is a block of s·B·A (rebuild.Block).
type Block struct {
	Module  string    `json:"module"`
	Out     int       `json:"out"`
	In      int       `json:"in"`
	Row0    int       `json:"row0"`
	Col0    int       `json:"col0"`
	Rows    int       `json:"rows"`
	Cols    int       `json:"cols"`
	Scaling float64   `json:"scaling"`
	Values  []float64 `json:"values"` // Rows × Cols, row-major
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Mean    float64   `json:"mean"`
	RMS     float64   `json:"rms"`
}

// HiddenTol are the hidden-state tolerances (see package compare).
type HiddenTol struct {
	MinCosine float64 `json:"min_cosine"`
	MaxRelL2  float64 `json:"max_rel_l2"`
}

// DefaultHidden are the default hidden-state tolerances: cosine ≥ 1 − 10⁻³
// (vLLM's bar for hidden states) and relative L2 ≤ 1.6·10⁻² (torch's rtol
// for bf16); package compare explains them.
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

// RecordStats compares one record's hidden states.
type RecordStats struct {
	ID     string       `json:"id"`
	Status string       `json:"status"` // ok | drift | missing | tokens | shape | unreadable
	Detail string       `json:"detail,omitempty"`
	Layers []LayerStats `json:"layers,omitempty"`
	Worst  *LayerStats  `json:"worst,omitempty"` // the layer with the lowest cosine
}

// HiddenSummary totals a hidden-state comparison.
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

// Hidden is a hidden-state comparison's outcome (compare.HiddenResult).
type Hidden struct {
	Outcome
	Summary HiddenSummary `json:"summary"`
	Records []RecordStats `json:"records"` // worst first
	// Source says where the candidate's states came from (folders, or
	// captured live from a server).
	Source string `json:"source,omitempty"`
	// Provenance says what was checked, with what and when.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Record is one test record (records/<dataset>.jsonl, FORMATS §4).
type Record struct {
	ID      string   `json:"id"`
	Dataset string   `json:"dataset"`
	Prompt  string   `json:"prompt"`
	Options []string `json:"options"`
	Answer  string   `json:"answer,omitempty"` // the known answer, when there is one
}

// Answer is one line of an answers file (reference/answers/<dataset>.jsonl).
type Answer struct {
	ID      string    `json:"id"`
	Options []string  `json:"options"`
	Logits  []float64 `json:"logits"`
	Probs   []float64 `json:"probs"`
	Choice  string    `json:"choice"`
}

// Check validates an answer's internal consistency.
func (a *Answer) Check() error {
	switch {
	case a.ID == "":
		return errors.New("no id")
	case len(a.Options) == 0:
		return errors.New("no options")
	case len(a.Logits) != len(a.Options) || len(a.Probs) != len(a.Options):
		return fmt.Errorf("%d options but %d logits and %d probs", len(a.Options), len(a.Logits), len(a.Probs))
	}
	found := false
	for _, o := range a.Options {
		found = found || o == a.Choice
	}
	if !found {
		return fmt.Errorf("choice %q is not an option", Clip(a.Choice, 60))
	}
	for i := range a.Logits {
		if math.IsNaN(a.Logits[i]) || math.IsInf(a.Logits[i], 0) || math.IsNaN(a.Probs[i]) || a.Probs[i] < 0 || a.Probs[i] > 1 {
			return fmt.Errorf("option %q: logit %v, prob %v", Clip(a.Options[i], 60), a.Logits[i], a.Probs[i])
		}
	}
	return nil
}

// AnswerStats compares one record's answers.
type AnswerStats struct {
	ID        string  `json:"id"`
	Ref       string  `json:"ref"`
	Cand      string  `json:"cand,omitempty"`
	Known     string  `json:"known,omitempty"`
	Agree     bool    `json:"agree"`
	MaxDLogit float64 `json:"max_dlogit"`
	KL        float64 `json:"kl"`     // KL(ref ‖ cand) of the option probabilities, nats
	Status    string  `json:"status"` // ok | disagree | missing | options
}

// AnswersSummary totals an answers comparison.
type AnswersSummary struct {
	Records     int     `json:"records"`
	Answered    int     `json:"answered"`
	Agree       int     `json:"agree"`
	Known       int     `json:"known"`        // records with a known answer
	RefCorrect  int     `json:"ref_correct"`  // the reference's choices that match them
	CandCorrect int     `json:"cand_correct"` // the candidate's
	MaxDLogit   float64 `json:"max_dlogit"`
	MeanKL      float64 `json:"mean_kl"`
}

// Answers is an answers comparison's outcome (compare.AnswersResult).
type Answers struct {
	Outcome
	Summary AnswersSummary `json:"summary"`
	Records []AnswerStats  `json:"records"`
	// Provenance says what was checked, with what and when.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// ProfileInfo describes a claims profile.
type ProfileInfo struct {
	Name       string `json:"name"`
	Adapter    string `json:"adapter"`
	Rank       int    `json:"r"`
	Pairs      int    `json:"pairs"`
	Parameters int64  `json:"parameters"`
	Reference  string `json:"reference,omitempty"` // where its references live (reference.source)
	// The checkpoints the adapter was extracted from, as Hub sources
	// (owner/name@revision): the rebuild's defaults.
	Base  string `json:"base,omitempty"`
	Tuned string `json:"tuned,omitempty"`
}
