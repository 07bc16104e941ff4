package service

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
)

// DecodeStrict decodes data, one JSON value, into v: trailing data (a
// second value, or anything but white space) and duplicate keys in any
// object are refused. Keys that differ only in case count as duplicates,
// since encoding/json matches them to the same field.
func DecodeStrict(data []byte, v any) error {
	if err := noDuplicateKeys(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// noDuplicateKeys walks data's tokens and refuses an object with the same
// key twice.
func noDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		keys   map[string]bool // nil for an array
		expect bool            // the next token of an object is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		top := (*level)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.keys != nil && top.expect {
			if k, ok := tok.(string); ok {
				lk := strings.ToLower(k)
				if top.keys[lk] {
					return fmt.Errorf("duplicate key %q", clip(k, 40))
				}
				top.keys[lk], top.expect = true, false
				continue
			}
		}
		if top != nil && top.keys != nil && !top.expect {
			top.expect = true // this token is (or opens) the value
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, expect: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// IsJSON tells whether a Content-Type header names application/json (any
// parameters, such as charset=utf-8, allowed).
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// BearerOK tells whether an Authorization header carries token with the
// Bearer scheme (matched case-insensitively, RFC 7235), comparing the
// token in constant time.
func BearerOK(header, token string) bool {
	scheme, got, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got = strings.TrimSpace(got)
	return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 && token != ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
