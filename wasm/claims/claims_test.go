package claims

import (
	"strings"
	"testing"
)

// The card's stated totals must follow from its module table (FORMATS §1).
func TestBuiltinProfilesAreConsistent(t *testing.T) {
	for _, name := range Names() {
		p, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		if fs := p.Check(); len(fs) != 0 {
			t.Errorf("%s: %v", name, fs)
		}
		d := p.Derived()
		seen := map[string]bool{}
		for _, pr := range p.Pairs() {
			if seen[pr.Module] {
				t.Errorf("%s: %s twice", name, pr.Module)
			}
			seen[pr.Module] = true
		}
		if d.Pairs != len(seen) || d.Bytes != 2*d.Parameters {
			t.Errorf("%s: derived %+v", name, d)
		}
	}
}

func TestClefLayout(t *testing.T) {
	p, err := Builtin("clef-lora-r256")
	if err != nil {
		t.Fatal(err)
	}
	full := 0
	for _, l := range p.Layers() {
		if p.IsFull(l) {
			full++
			if l%4 != 3 {
				t.Errorf("layer %d full", l)
			}
		}
	}
	if full != 6 || len(p.Layers()) != 24 {
		t.Errorf("full=%d layers=%d", full, len(p.Layers()))
	}
	// A profile whose stated counts disagree with its table is reported.
	p.Card.Parameters++
	if fs := p.Check(); len(fs) != 1 || !strings.Contains(fs[0].Message, "parameters") {
		t.Errorf("check = %v", fs)
	}
}

func TestParseStrict(t *testing.T) {
	for _, s := range []string{`{"rank":1}`, `{"rank":4,"modules":[{"name":"x","layers":"some","out":1,"in":1}]}`, `{"rnak":4}`} {
		if _, err := Parse([]byte(s)); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
	if _, err := Builtin("nope"); err == nil || !strings.Contains(err.Error(), "clef-lora-r256") {
		t.Errorf("unknown profile: %v", err)
	}
}
