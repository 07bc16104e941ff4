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
}

// Rebuild is the rebuild check's outcome (rebuild.Result).
type Rebuild struct {
	Outcome
	Compared  int              `json:"tensors_compared"`
	Differing []string         `json:"tensors_differing"`
	Matrices  []*RebuildMatrix `json:"matrices"`
	// Provenance says what was checked, with what and when.
	Provenance *Provenance `json:"provenance,omitempty"`
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
}
