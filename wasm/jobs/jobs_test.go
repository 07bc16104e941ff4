package jobs

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// Every input field of a spec is listed by Inputs (a host attaches the
// files of exactly those): each *Input field is set, by reflection, to an
// input of its own, and Inputs must return each once.
func TestSpecInputs(t *testing.T) {
	var s Spec
	v := reflect.ValueOf(&s).Elem()
	want := map[string]bool{}
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Type() == reflect.TypeOf(&Input{}) {
			key := fmt.Sprintf("field-%d", i)
			v.Field(i).Set(reflect.ValueOf(&Input{Files: key}))
			want[key] = true
		}
	}
	if len(want) < 9 {
		t.Fatalf("only %d input fields found by reflection", len(want))
	}
	got := map[string]bool{}
	for _, in := range s.Inputs() {
		if got[in.Files] {
			t.Fatalf("Inputs lists %s twice", in.Files)
		}
		got[in.Files] = true
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Inputs lists %v, the spec has %v", got, want)
	}
	if len((&Spec{}).Inputs()) != 0 {
		t.Fatal("an empty spec has inputs")
	}
}

// A spec survives JSON (the page posts it to the engine worker).
func TestSpecJSON(t *testing.T) {
	s := Spec{Kind: KindAudit, Mode: "exact", Adapter: &Input{URL: "http://x/"}, Claims: "demo", Workers: 2, Timeout: 5e9}
	data, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	var back Spec
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("round trip: %+v, want %+v", back, s)
	}
}
