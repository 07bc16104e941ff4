package report

// Latency totals a batch's decision latencies (nearest-rank percentiles
// over the answered requests).
type Latency struct {
	N          int     `json:"n"`
	P50        float64 `json:"p50_ms"`
	P90        float64 `json:"p90_ms"`
	P99        float64 `json:"p99_ms"`
	Max        float64 `json:"max_ms"`
	Throughput float64 `json:"per_second"`
}

// The statuses of a decision row.
const (
	Answered = "answered"
	Failed   = "failed"
)

// DecisionRow is one record's decision.
type DecisionRow struct {
	ID        string  `json:"id"`
	Dataset   string  `json:"dataset,omitempty"`
	Status    string  `json:"status"` // answered | failed
	Choice    string  `json:"choice,omitempty"`
	Reference string  `json:"reference,omitempty"` // the reference's choice
	Known     string  `json:"known,omitempty"`     // the record's known answer
	LatencyMS float64 `json:"latency_ms"`
	Error     string  `json:"error,omitempty"`
	// CORS: the error looks like a browser's refusal of a cross-origin
	// request (the page then suggests clefcheck proxy).
	CORS bool `json:"cors,omitempty"`
}

// DecisionsSummary totals a batch of decisions.
type DecisionsSummary struct {
	Server   string  `json:"server"` // the server's URL, or the in-browser demo model
	Records  int     `json:"records"`
	Answered int     `json:"answered"`
	Failed   int     `json:"failed"`
	Latency  Latency `json:"latency"`
	Seconds  float64 `json:"seconds"`
	// Agree counts the answered records whose choice is the reference's
	// (with a reference).
	Agree   *int            `json:"agree,omitempty"`
	Answers *AnswersSummary `json:"answers,omitempty"`
	Hidden  *HiddenSummary  `json:"hidden,omitempty"`
}

// Decisions is a batch of decisions compared with the references: the
// schema of clefcheck decide --json and of the Decisions page's download.
// Records are in the order the batch was given.
type Decisions struct {
	Outcome
	Summary DecisionsSummary `json:"summary"`
	Records []DecisionRow    `json:"records"`
	// Provenance says what was checked, with what and when.
	Provenance *Provenance `json:"provenance,omitempty"`
}

// Decided is one decision.
type Decided struct {
	Choice  string    `json:"choice"`
	Options []string  `json:"options"`
	Probs   []float64 `json:"probs"`
	MS      float64   `json:"ms"`
}
