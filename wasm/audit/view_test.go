package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// viewFS is an FS whose safetensors files are Viewers (source.Viewer) of
// their whole bytes, as a browser pool worker's files are of the span it
// was handed, and refuse every read past the header: an audit over it
// passes only if it takes the tensors' bytes from the views.
type viewFS struct {
	fs.FS
	dir   string
	start map[string]int64
}

func (v *viewFS) Open(name string) (fs.File, error) {
	f, err := v.FS.Open(name)
	if err != nil || !strings.HasSuffix(name, ".safetensors") {
		return f, err
	}
	data, err := os.ReadFile(filepath.Join(v.dir, name))
	if err != nil {
		return nil, err
	}
	return &viewFile{File: f, data: data, start: v.start[name]}, nil
}

type viewFile struct {
	fs.File
	data  []byte
	start int64
}

var errPastHeader = errors.New("read past the header refused (the test serves the tensors by View only)")

func (f *viewFile) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.start {
		return 0, errPastHeader
	}
	return copy(p, f.data[off:]), nil
}

func (f *viewFile) View(off int64, n int) ([]byte, bool) {
	if off < 0 || n < 0 || off+int64(n) > int64(len(f.data)) {
		return nil, false
	}
	return f.data[off : off+int64(n)], true
}

// TestViewedFactors: where the source holds a pair's bytes already (a
// Viewer), the quick and exact audits read them in place, with the very
// figures and findings of an audit that reads them — on the demo's
// adapter and on one with a NaN in a factor. That the files do refuse
// reads is checked too: the randomized audit's probes read into their own
// buffers, and over these files they cannot.
func TestViewedFactors(t *testing.T) {
	a := load(t)
	clean := a.write(t, 1)
	bad := load(t)
	b := bad.tensors[3].Data
	b[10], b[11] = 0xc0, 0x7f // a bf16 NaN
	tampered := bad.write(t, 1)
	for _, dir := range []string{clean, tampered} {
		st := map[string]int64{"adapter_model.safetensors": dataStart(t, filepath.Join(dir, "adapter_model.safetensors"))}
		for _, mode := range []report.Mode{report.ModeQuick, report.ModeExact} {
			opt := Options{Mode: mode, Workers: 2, NoAutoReport: true}
			want, err := Run(context.Background(), source.Dir(dir), ".", opt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Run(context.Background(), &viewFS{FS: source.Dir(dir), dir: dir, start: st}, ".", opt)
			if err != nil {
				t.Fatal(err)
			}
			if got.Verdict != want.Verdict || !sameJSON(t, got.Matrices, want.Matrices) || !sameJSON(t, got.Findings, want.Findings) {
				t.Errorf("%s, %s: viewed %s %v, read %s %v", filepath.Base(dir), mode, got.Verdict, got.Findings, want.Verdict, want.Findings)
			}
			if dir == tampered && got.Verdict != "fail" {
				t.Errorf("%s: the NaN went unseen through the views: %s", mode, got.Verdict)
			}
		}
	}
	st := map[string]int64{"adapter_model.safetensors": dataStart(t, filepath.Join(clean, "adapter_model.safetensors"))}
	res, err := Run(context.Background(), &viewFS{FS: source.Dir(clean), dir: clean, start: st}, ".", Options{Mode: report.ModeRandomized, Workers: 1, NoAutoReport: true})
	if err == nil && res.Verdict != "error" && res.Verdict != "fail" {
		t.Errorf("randomized over views only: %s, want its reads refused", res.Verdict)
	}
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(ja, jb)
}
