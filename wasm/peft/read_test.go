package peft

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// TestReadConfig: a good file parses; a missing or oversized one is
// ErrUnreadable and keeps source's file.unreadable code; a malformed one is
// ErrInvalid with config.invalid.
func TestReadConfig(t *testing.T) {
	fsys := fstest.MapFS{
		"ok/adapter_config.json":  {Data: []byte(`{"r": 16, "lora_alpha": 32}`)},
		"bad/adapter_config.json": {Data: []byte(`{"r": 0}`)},
		"big/adapter_config.json": {Data: []byte(`{"r": 16` + strings.Repeat(" ", MaxConfigSize) + `}`)},
	}
	cfg, err := ReadConfig(fsys, "ok/adapter_config.json")
	if err != nil || cfg.R != 16 || cfg.Scaling("") != 2 {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, c := range []struct {
		name     string
		sentinel error
		code     report.Code
	}{
		{"missing/adapter_config.json", ErrUnreadable, report.FileUnreadable},
		{"big/adapter_config.json", ErrUnreadable, report.FileUnreadable},
		{"bad/adapter_config.json", ErrInvalid, report.ConfigInvalid},
	} {
		_, err := ReadConfig(fsys, c.name)
		var e *report.Error
		if !errors.Is(err, c.sentinel) || !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: %v (want %v, %s)", c.name, err, c.sentinel, c.code)
		}
	}
}
