package findings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
)

func file(hdr string, data int) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(hdr)))
	b.WriteString(hdr)
	b.Write(make([]byte, data))
	return b.Bytes()
}

func open(data []byte) error {
	_, err := safetensors.NewReader(bytes.NewReader(data), int64(len(data)), "x.safetensors")
	return err
}

// TestOf: each sentinel maps to its code, a list to one finding per
// violation, other errors to report.FindingsOf's.
func TestOf(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		codes string
	}{
		{"nil", nil, "[]"},
		{"truncated", open([]byte{1, 2}), "[file.unreadable]"},
		{"header", open(file("[]", 0)), "[header.invalid]"},
		{"layout, twice", open(file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}}`, 5)), "[data.layout data.layout data.layout]"},
		{"wrapped", fmt.Errorf("opening: %w", open(file("[]", 0))), "[header.invalid]"},
		{"coded", &report.Error{Code: report.ConfigInvalid, Subject: "c", Msg: "m"}, "[config.invalid]"},
		{"plain", errors.New("boom"), "[file.unreadable]"},
	}
	_, err := safetensors.OpenCheckpoint(fstest.MapFS{}, ".", "model")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no checkpoint: %v", err)
	}
	cases = append(cases, struct {
		name  string
		err   error
		codes string
	}{"no checkpoint", err, "[file.unreadable]"})
	for _, c := range cases {
		var codes []report.Code
		fs := Of(c.err, "subject")
		for _, f := range fs {
			codes = append(codes, f.Code)
			if f.Severity != report.Fail || f.Subject == "" || f.Message == "" {
				t.Errorf("%s: %+v", c.name, f)
			}
		}
		if got := fmt.Sprint(codes); got != c.codes {
			t.Errorf("%s: %s, want %s (%v)", c.name, got, c.codes, c.err)
		}
	}
}
