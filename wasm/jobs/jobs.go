package jobs

import (
	"encoding/json"
	"time"

	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// The kinds of job.
const (
	KindAudit     = "audit"     // Adapter, Mode, claims, ReportFile, [Base+Tuned: with the rebuild] → Audit
	KindOpen      = "open"      // Adapter → Modules; Base+Tuned → their headers checked
	KindSample    = "sample"    // Adapter, Module, Row0, Col0, Size → Block
	KindRebuild   = "rebuild"   // Adapter, Base, Tuned (default: the claims' checkpoints), claims, [Rows, MaxBytes, Seed] → Rebuild (a Plan event first)
	KindHidden    = "hidden"    // Ref, Cand folders → Hidden; or Site+Server: captured live
	KindAnswers   = "answers"   // Ref, Cand folders of answers, [RecordFiles: known answers] → Answers
	KindRecords   = "records"   // Site, Datasets → Records, RefAnswers
	KindDecisions = "decisions" // Records|RecordFiles, RefAnswers|Ref, Server|Browser, [Hidden, Save] → Decisions (Row events)
	KindDecide    = "decide"    // Prompt, Options, Server|Browser → Decided
	KindClaims    = "claims"    // → ClaimNames; ClaimsFile → ClaimsName, ClaimsJSON (checked)
	KindSource    = "source"    // Adapter (a URL or Hub source) → Source, Listing: what it resolves to
	KindCache     = "cache"     // [Clear] → Cache: the browser's cache of byte ranges (the engine worker's; natively none)
	KindChart     = "chart"     // Chart → Charts: one figure drawn on demand (a pair's spectrum, a record's drift)
	KindCodes     = "codes"     // → Codes: every finding code, documented (the pages' codes page)
	KindTable     = "table"     // Table, View, [CSV] → Tables: the page of the last table of that id the view shows (CSV: all it keeps, as CSV)
)

// Input says where a job's files are: a base URL read by range (with an
// optional bearer token), or files the host attached under the key Files
// (the page's File objects: read in place, never copied whole).
type Input struct {
	// URL is an http(s) folder read by range, or a Hub source:
	// hf://owner/name[@rev][/path] or a Hub page URL (on Endpoint).
	URL string `json:"url,omitempty"`
	// Endpoint is the Hub's address for a Hub source ("": huggingface.co).
	Endpoint string `json:"endpoint,omitempty"`
	Token    string `json:"token,omitempty"`
	Files    string `json:"files,omitempty"`
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
	Label string `json:"label,omitempty"`
	// Engine names the engine that runs the job, for the reports'
	// provenance (report.Tool.Engine): in the browser, the site's build.
	Engine                          string `json:"engine,omitempty"`
	Adapter, Base, Tuned, Ref, Cand *Input `json:",omitempty"`
	// Site is the root of a demo world (records/, reference/, base/,
	// adapter/, head.json), for the demo records, the live hidden-state
	// reference and the in-browser demo model.
	Site *Input `json:"site,omitempty"`
	// audit
	Mode report.Mode `json:"mode,omitempty"` // quick | randomized (the default) | exact
	// The claims profile (audit, rebuild): a built-in name, a profile as
	// JSON, or a file (the only file of ClaimsFile; the claims kind checks
	// it).
	Claims     string          `json:"claims,omitempty"`
	ClaimsJSON json.RawMessage `json:"claims_json,omitempty"`
	ClaimsFile *Input          `json:"claims_file,omitempty"`
	// ReportFile is an extraction report to use instead of the adapter's
	// extraction-report.json (the only file of the input).
	ReportFile *Input `json:"report_file,omitempty"`
	// Workers bounds the parallel work of an audit or rebuild (0: all
	// cores natively, 1 in a browser worker).
	Workers int `json:"workers,omitempty"`
	// NoDigest skips computing the SHA-256 of the files an audit reads
	// (on by default; natively a local file is hashed by a read-ahead
	// goroutine beside the check's workers, one core at ~1.5 GB/s, which
	// bounds the quick audit; in the browser it may read again what the
	// pool workers read out of order).
	NoDigest bool `json:"no_digest,omitempty"`
	// rebuild (and audit with Base+Tuned). Rows > 0 samples that many
	// rows of every module from both checkpoints, read by range, and
	// estimates each module's figures with an interval; 0 rebuilds every
	// row (full). MaxBytes bounds what is read from the two checkpoints
	// (0: DefaultMaxBytes when sampled, no bound when full): a plan beyond
	// it does not start. Seed chooses the rows (0: a fresh one, reported).
	Rows     int    `json:"rows,omitempty"`
	MaxBytes int64  `json:"max_bytes,omitempty"`
	Seed     uint64 `json:"seed,omitempty"`
	// Clear empties the cache (cache).
	Clear bool `json:"clear,omitempty"`
	// sample
	Module string `json:"module,omitempty"`
	Row0   int    `json:"row0,omitempty"`
	Col0   int    `json:"col0,omitempty"`
	Size   int    `json:"size,omitempty"`
	// hidden (and decisions with Hidden): the tolerances (zero: the defaults)
	Tol *report.HiddenTol `json:"tolerances,omitempty"`
	// records, answers, decisions, decide, live hidden
	Datasets []string `json:"datasets,omitempty"`
	// Records are the records to send; RecordFiles is the same as
	// records/<dataset>.jsonl files (every *.jsonl of the input).
	Records     []report.Record           `json:"records,omitempty"`
	RecordFiles *Input                    `json:"record_files,omitempty"`
	RefAnswers  map[string]*report.Answer `json:"ref_answers,omitempty"`
	Server      string                    `json:"server,omitempty"`
	Token       string                    `json:"token,omitempty"`
	Concurrency int                       `json:"concurrency,omitempty"`
	// Timeout is the deadline of one decision, retries included (0: 60 s).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Hidden asks the server for hidden states (return_hidden) and, with
	// a reference (Ref: a folder with answers/ and hidden/), compares them.
	Hidden bool `json:"hidden,omitempty"`
	// Save writes the answers (answers/<dataset>.jsonl) and hidden states
	// (hidden/<id>.safetensors) through the host, in the reference layout.
	Save    bool     `json:"save,omitempty"`
	Browser bool     `json:"browser,omitempty"` // the demo model of Site, here
	Prompt  string   `json:"prompt,omitempty"`
	Options []string `json:"options,omitempty"`
	// table: the table's id, how to show it, and whether as CSV.
	Table string       `json:"table,omitempty"`
	View  *report.View `json:"view,omitempty"`
	CSV   bool         `json:"csv,omitempty"`
	// Chart is what a chart job draws.
	Chart *ChartSpec `json:"chart,omitempty"`
}

// ChartSpec asks for one figure (package chart draws it in the engine:
// app.wasm links no chart code): a pair's spectrum against the report and
// the tolerances, or one record's hidden-state drift per layer.
type ChartSpec struct {
	Pair      *report.AuditMatrix `json:"pair,omitempty"`
	Tol       *report.AuditTol    `json:"tol,omitempty"`
	Layers    []report.LayerStats `json:"layers,omitempty"`
	HiddenTol report.HiddenTol    `json:"hidden_tol"`
	What      string              `json:"what,omitempty"` // the record the layers are of
}

// Figure is a chart as SVG (self-contained: axes, legend, tolerances, a
// <title> hover text on every mark, and its caption in <title>/<desc>),
// with its caption to show below it. Key tells figures of one kind apart
// (an adapter heatmap's metric), Label names it for a chooser.
type Figure struct {
	ID      string `json:"id"`
	Key     string `json:"key,omitempty"`
	Label   string `json:"label,omitempty"`
	Caption string `json:"caption"`
	SVG     string `json:"svg"`
}

// Inputs are the spec's inputs that are set (a host attaches the files
// they name).
func (s *Spec) Inputs() []*Input {
	var out []*Input
	for _, in := range []*Input{s.Adapter, s.Base, s.Tuned, s.Ref, s.Cand, s.Site, s.ClaimsFile, s.ReportFile, s.RecordFiles} {
		if in != nil {
			out = append(out, in)
		}
	}
	return out
}

// Event is what a running job reports; one field is set.
type Event struct {
	Status    *progress.Status    `json:"status,omitempty"`
	Note      string              `json:"note,omitempty"`
	Engine    string              `json:"engine,omitempty"`    // where the audit's pairs are checked
	Inventory *report.Audit       `json:"inventory,omitempty"` // the audit's header inventory
	Row       *report.DecisionRow `json:"row,omitempty"`       // one decision
	Plan      *report.RebuildPlan `json:"plan,omitempty"`      // what a rebuild will read, before it starts
	Lines     []string            `json:"lines,omitempty"`     // with Inventory: its summary lines (report.AuditSummary.Lines)
}

// Output is a finished job; the field of its kind is set.
type Output struct {
	Audit      *report.Audit             `json:"audit,omitempty"`
	Modules    []string                  `json:"modules,omitempty"`
	CkErr      string                    `json:"checkpoint_error,omitempty"` // open: why Base/Tuned did not open
	Block      *report.Block             `json:"block,omitempty"`
	Rebuild    *report.Rebuild           `json:"rebuild,omitempty"`
	Hidden     *report.Hidden            `json:"hidden,omitempty"`
	Answers    *report.Answers           `json:"answers,omitempty"`
	Note       string                    `json:"note,omitempty"` // a source job: what it resolved to, in words
	Records    []report.Record           `json:"records,omitempty"`
	RefAnswers map[string]*report.Answer `json:"ref_answers,omitempty"`
	Decisions  *report.Decisions         `json:"decisions,omitempty"`
	Decided    *report.Decided           `json:"decided,omitempty"`
	ClaimNames []string                  `json:"claim_names,omitempty"` // the built-in profiles
	Profiles   []report.ProfileInfo      `json:"profiles,omitempty"`    // the built-in profiles, described
	ClaimsName string                    `json:"claims_name,omitempty"`
	ClaimsJSON json.RawMessage           `json:"claims_json,omitempty"`
	// Source is what a source job's input resolved to (a Hub repository:
	// down to the commit), Listing its files with the sizes and SHA-256
	// the host lists.
	Source  *report.SourceInfo `json:"source,omitempty"`
	Listing []report.FileInfo  `json:"listing,omitempty"`
	// Attestation is an audit's unsigned in-toto statement (report.Attest),
	// or NoAttestation why there is none; Badge its verdict as an SVG.
	Attestation   json.RawMessage `json:"attestation,omitempty"`
	NoAttestation string          `json:"no_attestation,omitempty"`
	Badge         string          `json:"badge,omitempty"`
	// Provenance is an audit's provenance as text, for the page to show
	// as it is (the Markdown report's section).
	Provenance string     `json:"provenance,omitempty"`
	Cache      *CacheInfo `json:"cache,omitempty"`
	// Codes documents every finding code (report.Codes).
	Codes []report.CodeDoc `json:"codes,omitempty"`
	// Tables are the result as the pages show it (runner.Tables): the
	// first page of each table, every cell formatted, every column
	// explained; a table job's page. CSV is a table job's CSV.
	Tables []*report.TablePage `json:"tables,omitempty"`
	CSV    string              `json:"csv,omitempty"`
	// Lines are an audit's summary lines (report.AuditSummary.Lines).
	Lines []string `json:"lines,omitempty"`
	// Markdown is the report of an audit, a block, a rebuild, a hidden
	// state comparison or a batch of decisions, for download.
	Markdown string `json:"markdown,omitempty"`
	// Charts are the result's figures (package chart): an audit's
	// modules × layers heatmaps (one per metric), a block's ΔW, a hidden
	// comparison's drift per layer, a batch's latency and agreement; a
	// chart job's one figure.
	Charts []Figure `json:"charts,omitempty"`
}

// CacheInfo is the browser's cache of the byte ranges read from URLs
// (kept under their commit or ETag, in the Origin Private File System).
type CacheInfo struct {
	On      bool   `json:"on"`
	Why     string `json:"why,omitempty"` // why it is off
	Bytes   int64  `json:"bytes"`         // held
	Max     int64  `json:"max"`
	Entries int    `json:"entries"`
	Hits    int64  `json:"hits"`    // bytes read from it this session
	Fetched int64  `json:"fetched"` // bytes read through it from the network
}

// Limits on what a spec may ask for: a page's sample block is a heatmap,
// not a matrix dump, and a batch is a test set, not a workload.
const (
	MaxBlock       = 64
	MaxRecords     = 100000
	MaxConcurrency = 32
)

// DefaultRows and DefaultMaxBytes are the sampled rebuild's defaults (the
// CLI's --rows and --max-bytes): for Clef, 32 rows of each of the 186
// modules from both checkpoints are ≈ 163 MB, the identity check's 2 × 1,184
// tensor heads of at most 256 KiB ≈ 330 MB.
const (
	DefaultRows     = 32
	DefaultMaxBytes = 512 << 20
)

// DemoDatasets are the demo world's record sets.
var DemoDatasets = []string{"arc-mini", "intents-mini"}
