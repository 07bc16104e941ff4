package service_test

import (
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/service"
)

const okBody = `{"id":"a","prompt":"p","options":["A","B"]}`

// TestDecisionRefusesSmuggledJSON: a body that two JSON parsers could read
// differently — a key twice (in any case: encoding/json folds it), a
// second value, trailing bytes — is refused before it is decided.
func TestDecisionRefusesSmuggledJSON(t *testing.T) {
	_, hs := demoServer(t)
	auth := map[string]string{"Authorization": "Bearer sekret", "Content-Type": "application/json"}
	for _, b := range []string{
		`{"id":"a","id":"b","prompt":"p","options":["A","B"]}`,
		`{"id":"a","ID":"b","prompt":"p","options":["A","B"]}`,
		`{"id":"a","prompt":"p","options":["A","B"],"options":["C","D"]}`,
		`{"id":"a","prompt":"p","options":["A","B"],"x":{"k":1,"k":2}}`,
		`{"id":"a","prompt":"p","options":["A","B"],"x":[{"k":1,"K":2}]}`,
		okBody + okBody,
		okBody + ` {"id":"b"}`,
		okBody + `x`,
		okBody + `]`,
	} {
		r, body := do(t, "POST", hs.URL+decision.Path, b, auth)
		if r.StatusCode != 400 || !strings.Contains(body, "invalid_request") {
			t.Errorf("%s: %d %s", b, r.StatusCode, body)
		}
	}
	// White space after the value, nested objects with distinct keys: fine.
	for _, b := range []string{okBody + " \n\t", `{"id":"a","prompt":"p","options":["A","B"],"x":{"id":1},"y":[{"id":2},{"id":3}]}`} {
		if r, body := do(t, "POST", hs.URL+decision.Path, b, auth); r.StatusCode != 200 {
			t.Errorf("%q: %d %s", b, r.StatusCode, body)
		}
	}
}

// TestDecisionRequiresJSONContentType: a body not labelled JSON is refused
// (415): a page on another origin can POST text/plain or a form without a
// preflight, never application/json.
func TestDecisionRequiresJSONContentType(t *testing.T) {
	_, hs := demoServer(t)
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "application/json-seq"} {
		hdr := map[string]string{"Authorization": "Bearer sekret"}
		if ct != "" {
			hdr["Content-Type"] = ct
		}
		if r, body := do(t, "POST", hs.URL+decision.Path, okBody, hdr); r.StatusCode != 415 {
			t.Errorf("Content-Type %q: %d %s", ct, r.StatusCode, body)
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON"} {
		if r, body := do(t, "POST", hs.URL+decision.Path, okBody, map[string]string{"Authorization": "Bearer sekret", "Content-Type": ct}); r.StatusCode != 200 {
			t.Errorf("Content-Type %q: %d %s", ct, r.StatusCode, body)
		}
	}
}

// TestDecisionTokenGuessing: only the exact token passes — not a prefix,
// not the token with more after it, not another scheme; the scheme's
// name is matched in any case (RFC 7235), the token in constant time.
func TestDecisionTokenGuessing(t *testing.T) {
	_, hs := demoServer(t)
	for _, a := range []string{"", "Bearer", "Bearer ", "Bearer s", "Bearer sekre", "Bearer sekret2", "Bearer SEKRET", "Basic sekret", "sekret", "Bearersekret", "Token sekret"} {
		if r, _ := do(t, "POST", hs.URL+decision.Path, okBody, map[string]string{"Authorization": a, "Content-Type": "application/json"}); r.StatusCode != 401 {
			t.Errorf("Authorization %q: %d", a, r.StatusCode)
		}
	}
	for _, a := range []string{"Bearer sekret", "bearer sekret", "BEARER sekret", "Bearer  sekret "} {
		if r, body := do(t, "POST", hs.URL+decision.Path, okBody, map[string]string{"Authorization": a, "Content-Type": "application/json"}); r.StatusCode != 200 {
			t.Errorf("Authorization %q: %d %s", a, r.StatusCode, body)
		}
	}
	if service.BearerOK("Bearer ", "") {
		t.Error("an empty token passes")
	}
}

// TestDecisionRefusesOtherOrigins: a page on an origin not allowed gets
// 403 even for a request a browser sends without a preflight; "*" allows
// any origin but "null".
func TestDecisionRefusesOtherOrigins(t *testing.T) {
	_, hs := demoServer(t) // allows https://kvit-s.hf.space
	for _, o := range []string{"https://evil.example", "null", "https://kvit-s.hf.space.evil.example"} {
		r, _ := do(t, "POST", hs.URL+decision.Path, okBody, map[string]string{"Origin": o, "Authorization": "Bearer sekret", "Content-Type": "application/json"})
		if r.StatusCode != 403 || r.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("POST from %s: %d %v", o, r.StatusCode, r.Header)
		}
	}
	r, _ := do(t, "POST", hs.URL+decision.Path, okBody, map[string]string{"Origin": "https://kvit-s.hf.space", "Authorization": "Bearer sekret", "Content-Type": "application/json"})
	if r.StatusCode != 200 || r.Header.Get("Access-Control-Allow-Origin") != "https://kvit-s.hf.space" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("POST from the allowed origin: %d %v", r.StatusCode, r.Header)
	}
	if service.Allowed([]string{"*"}, "null") || !service.Allowed([]string{"*"}, "https://a.example") || !service.Allowed([]string{"null"}, "null") {
		t.Error(`"*" must allow any origin but "null", which only a listed "null" allows`)
	}
}

func TestDecodeStrict(t *testing.T) {
	var v map[string]any
	for _, bad := range []string{``, ` `, `{`, `{"a":1,"a":2}`, `{"a":{"b":[1,{"c":1,"C":2}]}}`, `1 2`, `{} {}`, `{}x`, `[{"a":1},{"a":1,"a":1}]`} {
		if err := service.DecodeStrict([]byte(bad), &v); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, good := range []string{`{}`, `{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`, "{\"a\":[1,2,3]}\n"} {
		if err := service.DecodeStrict([]byte(good), &v); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}
