package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestAttest(t *testing.T) {
	a := &Audit{Outcome: Outcome{Verdict: VerdictWarn}, Provenance: &Provenance{
		Tool:    Tool{Name: "clefcheck", Version: "v1.2.0", Revision: "abc"},
		Source:  SourceInfo{Kind: "hub", Repo: "kvit-s/clef-lora-r256", Commit: strings.Repeat("c", 40), Path: ""},
		Files:   []FileInfo{{Name: "adapter_config.json", Size: 10, SHA256: strings.Repeat("1", 64)}, {Name: "adapter_model.safetensors", Size: 99, SHA256: strings.Repeat("2", 64)}},
		Claims:  &ClaimsInfo{Name: "clef-lora-r256", SHA256: strings.Repeat("3", 64)},
		Mode:    ModeExact,
		Started: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), Seconds: 2,
		Digests: DigestSummary{Computed: true},
	}}
	st, err := Attest(a)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := st.MarshalIndent()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	p := m["predicate"].(map[string]any)
	subj := m["subject"].([]any)
	if m["_type"] != StatementType || m["predicateType"] != VSAType || len(subj) != 2 ||
		subj[1].(map[string]any)["digest"].(map[string]any)["sha256"] != strings.Repeat("2", 64) ||
		p["verificationResult"] != "PASSED" || p["resourceUri"] != "hf://kvit-s/clef-lora-r256@"+strings.Repeat("c", 40) ||
		p["timeVerified"] != "2026-12-01T08:00:02Z" || p["policy"].(map[string]any)["uri"] != "clefcheck:claims/clef-lora-r256" ||
		p["verifiedLevels"].([]any)[0] != "CLEFCHECK_EXACT_AUDIT" {
		t.Fatalf("statement:\n%s", data)
	}
	a.Verdict = VerdictFail
	if st, _ := Attest(a); st.Predicate.VerificationResult != "FAILED" || len(st.Predicate.VerifiedLevels) != 0 {
		t.Errorf("failed audit: %+v", st.Predicate)
	}
	a.Verdict = VerdictError
	if _, err := Attest(a); err == nil {
		t.Error("an audit that could not run was attested")
	}
	a.Verdict, a.Provenance.Digests.Computed = VerdictPass, false
	if _, err := Attest(a); err == nil {
		t.Error("an audit without digests was attested")
	}
}

func TestBadge(t *testing.T) {
	for v, want := range map[Verdict]string{VerdictPass: "#1b5e20", VerdictFail: "#b71c1c", VerdictError: "#555555", VerdictWarn: "#8a4b00"} {
		svg := Badge("clef <lora>", v)
		if !strings.Contains(svg, want) || !strings.Contains(svg, "<title>clef &lt;lora&gt;: "+v.Label()) || strings.Contains(svg, "<lora>") {
			t.Errorf("%s: %s", v, svg)
		}
	}
	if !strings.Contains(Badge("x", VerdictError), "not checked") {
		t.Error("the error badge does not say it is not a failure")
	}
}
