package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The in-toto Statement v1 and the SLSA verification summary predicate an
// audit is attested with.
const (
	StatementType = "https://in-toto.io/Statement/v1"
	VSAType       = "https://slsa.dev/verification_summary/v1"
	VerifierID    = "https://github.com/kvit-s/clefcheck"
)

// Statement is an in-toto Statement v1 whose predicate is a SLSA
// verification summary (VSA v1). It is unsigned: sign it with standard
// tools (e.g. an in-toto or sigstore signer wrapping it in a DSSE
// envelope).
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     VSA       `json:"predicate"`
}

// Subject is an attested file and its digest.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// VSA is the verification summary predicate.
type VSA struct {
	Verifier struct {
		ID      string            `json:"id"`
		Version map[string]string `json:"version,omitempty"`
	} `json:"verifier"`
	TimeVerified string `json:"timeVerified"`
	ResourceURI  string `json:"resourceUri"`
	Policy       struct {
		URI    string            `json:"uri"`
		Digest map[string]string `json:"digest,omitempty"`
	} `json:"policy"`
	InputAttestations  []any    `json:"inputAttestations"`
	VerificationResult string   `json:"verificationResult"` // PASSED | FAILED
	VerifiedLevels     []string `json:"verifiedLevels"`
}

// Attest makes the statement of an audit: the subjects are the files read
// with their SHA-256, the policy is the claims profile with its digest,
// the result PASSED (pass or warn) or FAILED (fail). An audit that could
// not be completed, or whose digests were not computed, attests nothing.
// verifiedLevels holds CLEFCHECK_<MODE>_AUDIT when it passed (custom
// levels, as the VSA allows, never SLSA_ ones).
func Attest(a *Audit) (*Statement, error) {
	p := a.Provenance
	switch {
	case a.Verdict == VerdictError:
		return nil, errors.New("the audit could not be completed: there is nothing to attest")
	case p == nil || !p.Digests.Computed || len(p.Files) == 0:
		return nil, errors.New("the audit computed no file digests (the subjects of an attestation)")
	}
	st := &Statement{Type: StatementType, PredicateType: VSAType}
	for _, f := range p.Files {
		if f.SHA256 == "" {
			return nil, fmt.Errorf("%s has no digest", f.Name)
		}
		st.Subject = append(st.Subject, Subject{Name: f.Name, Digest: map[string]string{"sha256": f.SHA256}})
	}
	v := &st.Predicate
	v.Verifier.ID = VerifierID
	v.Verifier.Version = map[string]string{"clefcheck": p.Tool.Version}
	if p.Tool.Revision != "" {
		v.Verifier.Version["clefcheck"] += "+" + p.Tool.Revision
	}
	v.TimeVerified = p.Started.Add(time.Duration(p.Seconds * float64(time.Second))).UTC().Format(time.RFC3339)
	v.ResourceURI = resourceURI(p.Source)
	v.Policy.URI = "clefcheck:claims/none"
	if p.Claims != nil {
		v.Policy.URI = "clefcheck:claims/" + p.Claims.Name
		v.Policy.Digest = map[string]string{"sha256": p.Claims.SHA256}
	}
	v.InputAttestations = []any{}
	v.VerifiedLevels = []string{}
	v.VerificationResult = "FAILED"
	if a.Verdict == VerdictPass || a.Verdict == VerdictWarn {
		v.VerificationResult = "PASSED"
		v.VerifiedLevels = []string{"CLEFCHECK_" + strings.ToUpper(string(p.Mode)) + "_AUDIT"}
	}
	return st, nil
}

// resourceURI names the audited artifact: a Hub repository at its commit
// (hf://owner/name@commit/path), a URL, or a local path.
func resourceURI(s SourceInfo) string {
	switch s.Kind {
	case "hub":
		u := "hf://" + s.Repo + "@" + s.Commit
		if s.Path != "" {
			u += "/" + s.Path
		}
		return u
	case "url":
		return s.URL
	}
	return "file:" + s.Local
}

// MarshalIndent is the statement as written to a file.
func (s *Statement) MarshalIndent() ([]byte, error) { return json.MarshalIndent(s, "", "  ") }
