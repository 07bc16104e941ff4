package report

import "time"

// FileDigest is the code of a file whose bytes differ from the SHA-256 its
// host lists (the Hub's LFS oid): fail.
const FileDigest Code = "file.digest"

// Provenance says what was checked, with what and when: the tool, the
// source (down to the commit a revision resolved to), every file's size
// and SHA-256 (computed while its bytes passed, and the one its host
// lists), the claims profile and its digest, the mode, the seed, the time.
// Every result carries it, so a report can be reproduced and attested.
type Provenance struct {
	Tool    Tool          `json:"tool"`
	Source  SourceInfo    `json:"source"`
	Files   []FileInfo    `json:"files"`
	Claims  *ClaimsInfo   `json:"claims,omitempty"`
	Mode    Mode          `json:"mode,omitempty"`
	Seed    string        `json:"seed,omitempty"`
	Started time.Time     `json:"started"`
	Seconds float64       `json:"seconds"`
	Digests DigestSummary `json:"digests"`
	// Inputs are the check's other inputs (a rebuild's checkpoints, the
	// references and the candidate, the decision server), by role.
	Inputs []Input `json:"inputs,omitempty"`
}

// Input is one of a check's inputs.
type Input struct {
	Role string `json:"role"` // base, tuned, reference, candidate, records, server, …
	SourceInfo
}

// Tool is the program that made a report.
type Tool struct {
	Name     string `json:"name"`               // clefcheck
	Version  string `json:"version"`            // the module's version, or (devel)
	Revision string `json:"revision,omitempty"` // the VCS revision it was built from
	Modified bool   `json:"modified,omitempty"` // built from a tree with changes
	Engine   string `json:"engine,omitempty"`   // in the browser: the hash of engine.wasm
}

// SourceInfo is where the files came from.
type SourceInfo struct {
	Kind     string `json:"kind"`               // hub | url | local | files
	Endpoint string `json:"endpoint,omitempty"` // hub
	Repo     string `json:"repo,omitempty"`     // hub
	Revision string `json:"revision,omitempty"` // hub: as asked
	Commit   string `json:"commit,omitempty"`   // hub: what it resolved to, read throughout
	Path     string `json:"path,omitempty"`     // hub: the folder in the repository
	URL      string `json:"url,omitempty"`      // url
	Local    string `json:"local,omitempty"`    // local
}

// FileInfo is one file read.
type FileInfo struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"` // computed ("" when not computed)
	// Listed is the SHA-256 the host lists for the file (the Hub's LFS
	// oid), when it lists one.
	Listed string `json:"listed_sha256,omitempty"`
}

// ClaimsInfo names the claims profile checked against and its digest.
type ClaimsInfo struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"` // of the profile's JSON as it was read
}

// DigestSummary says whether the files' SHA-256 were computed, and what it
// cost.
type DigestSummary struct {
	Computed bool    `json:"computed"`
	Why      string  `json:"why,omitempty"` // why not, when not
	Bytes    int64   `json:"bytes"`         // hashed
	Reread   int64   `json:"reread"`        // of which read again for the digest (not in order the first time)
	Seconds  float64 `json:"seconds"`       // spent hashing and re-reading
}
