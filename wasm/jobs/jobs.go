// Package jobs is the engine's one door for the browser, its types only:
// every piece of work a page asks for — an audit, a block of s·B·A, a
// rebuild check, a hidden-state comparison, a batch of decisions, one
// decision — is a Spec in JSON, reporting Events as it goes and ending
// with an Output in JSON. Package runner runs them.
//
// In the browser the pages (app.wasm) hold no engine code: they import
// this package and the result types, and post a Spec to the engine worker
// (engine.wasm, wasm/browser/worker), which runs it and posts the events
// and the output back. The page stays small and never computes; the worker
// runs the same Go as the CLI. Natively (the component tests, a Go host)
// runner.Run is called directly.
package jobs

import (
	"encoding/json"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// The kinds of job.
const (
	KindAudit     = "audit"     // Adapter, Mode, Claims|ClaimsJSON → Audit
	KindOpen      = "open"      // Adapter → Modules; Base+Tuned → their headers checked
	KindSample    = "sample"    // Adapter, Module, Row0, Col0, Size → Block
	KindRebuild   = "rebuild"   // Adapter, Base, Tuned → Rebuild
	KindHidden    = "hidden"    // Ref, Cand folders → Hidden; or Site+Server: captured live
	KindRecords   = "records"   // Site, Datasets → Records, Ref
	KindDecisions = "decisions" // Records, Ref, Server|Browser → Decisions (Row events)
	KindDecide    = "decide"    // Prompt, Options, Server|Browser → Decided
	KindClaims    = "claims"    // → ClaimNames; ClaimsFile → ClaimsName, ClaimsJSON (checked)
)

// Input says where a job's files are: a base URL read by range (with an
// optional bearer token), or files the host attached under the key Files
// (the page's File objects: read in place, never copied whole).
type Input struct {
	URL   string `json:"url,omitempty"`
	Token string `json:"token,omitempty"`
	Files string `json:"files,omitempty"`
}

func (in *Input) String() string {
	switch {
	case in == nil:
		return "nothing"
	case in.URL != "":
		return in.URL
	}
	return "local files"
}

// Spec is one job. Only the fields its Kind names are read.
type Spec struct {
	Kind string `json:"kind"`
	// Label says what the inputs are, for the reports: the adapter (audit)
	// or the checkpoints (rebuild).
	Label                           string `json:"label,omitempty"`
	Adapter, Base, Tuned, Ref, Cand *Input `json:",omitempty"`
	// Site is the root of a demo world (records/, reference/, base/,
	// adapter/, head.json), for the demo records, the live hidden-state
	// reference and the in-browser demo model.
	Site *Input `json:"site,omitempty"`
	// audit
	Mode       report.Mode     `json:"mode,omitempty"` // quick | randomized (the default) | exact
	Claims     string          `json:"claims,omitempty"`
	ClaimsJSON json.RawMessage `json:"claims_json,omitempty"`
	// claims: a claims profile file to check (the only file of the input)
	ClaimsFile *Input `json:"claims_file,omitempty"`
	// sample
	Module string `json:"module,omitempty"`
	Row0   int    `json:"row0,omitempty"`
	Col0   int    `json:"col0,omitempty"`
	Size   int    `json:"size,omitempty"`
	// records, decisions, decide, live hidden
	Datasets    []string                `json:"datasets,omitempty"`
	Records     []refs.Record           `json:"records,omitempty"`
	RefAnswers  map[string]*refs.Answer `json:"ref_answers,omitempty"`
	Server      string                  `json:"server,omitempty"`
	Token       string                  `json:"token,omitempty"`
	Concurrency int                     `json:"concurrency,omitempty"`
	Browser     bool                    `json:"browser,omitempty"` // the demo model of Site, here
	Prompt      string                  `json:"prompt,omitempty"`
	Options     []string                `json:"options,omitempty"`
}

// Inputs are the spec's inputs that are set (a host attaches the files
// they name).
func (s *Spec) Inputs() []*Input {
	var out []*Input
	for _, in := range []*Input{s.Adapter, s.Base, s.Tuned, s.Ref, s.Cand, s.Site, s.ClaimsFile} {
		if in != nil {
			out = append(out, in)
		}
	}
	return out
}

// Event is what a running job reports; one field is set.
type Event struct {
	Status    *progress.Status `json:"status,omitempty"`
	Note      string           `json:"note,omitempty"`
	Engine    string           `json:"engine,omitempty"`    // where the audit's pairs are checked
	Inventory *report.Audit    `json:"inventory,omitempty"` // the audit's header inventory
	Row       *Row             `json:"row,omitempty"`       // one decision
}

// Row is one record's decision, as the Decisions page lists it.
type Row struct {
	ID     string  `json:"id"`
	Choice string  `json:"choice,omitempty"`
	Ref    string  `json:"reference,omitempty"`
	Known  string  `json:"known,omitempty"`
	Err    string  `json:"error,omitempty"`
	MS     float64 `json:"ms"`
	CORS   bool    `json:"cors,omitempty"` // the error looks like a CORS refusal
}

// Decisions is a finished batch.
type Decisions struct {
	Rows    []Row                   `json:"rows"`
	Summary *compare.AnswersSummary `json:"summary,omitempty"`
	Latency decision.Latency        `json:"latency"`
	Failed  int                     `json:"failed"`
	Agree   int                     `json:"agree"`
}

// Decided is one decision.
type Decided struct {
	Choice  string    `json:"choice"`
	Options []string  `json:"options"`
	Probs   []float64 `json:"probs"`
	MS      float64   `json:"ms"`
}

// Output is a finished job; the field of its kind is set.
type Output struct {
	Audit      *report.Audit           `json:"audit,omitempty"`
	Modules    []string                `json:"modules,omitempty"`
	CkErr      string                  `json:"checkpoint_error,omitempty"` // open: why Base/Tuned did not open
	Block      *rebuild.Block          `json:"block,omitempty"`
	Rebuild    *rebuild.Result         `json:"rebuild,omitempty"`
	Hidden     *compare.HiddenResult   `json:"hidden,omitempty"`
	Note       string                  `json:"note,omitempty"`
	Records    []refs.Record           `json:"records,omitempty"`
	RefAnswers map[string]*refs.Answer `json:"ref_answers,omitempty"`
	Decisions  *Decisions              `json:"decisions,omitempty"`
	Decided    *Decided                `json:"decided,omitempty"`
	ClaimNames []string                `json:"claim_names,omitempty"` // the built-in profiles
	ClaimsName string                  `json:"claims_name,omitempty"`
	ClaimsJSON json.RawMessage         `json:"claims_json,omitempty"`
	// Markdown is the report of an audit, a block, a rebuild, a hidden
	// state comparison or a batch of decisions, for download.
	Markdown string `json:"markdown,omitempty"`
}

// Limits on what a spec may ask for: a page's sample block is a heatmap,
// not a matrix dump, and a batch is a test set, not a workload.
const (
	MaxBlock       = 64
	MaxRecords     = 100000
	MaxConcurrency = 32
)

// DemoDatasets are the demo world's record sets.
var DemoDatasets = []string{"arc-mini", "intents-mini"}
