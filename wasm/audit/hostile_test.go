package audit

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// The attacks of issue 10, each built as real files in a temporary
// directory: the audit must end with a finding (never a crash, never a
// pass) while allocating well under 512 MB.

// hostileBudget is the most a hostile file may make the audit allocate in
// total (runtime.MemStats.TotalAlloc, which bounds the peak heap).
const hostileBudget = 256 << 20

// measure runs f and returns the bytes it allocated and how long it took.
func measure(t *testing.T, f func()) uint64 {
	t.Helper()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %.1f MB in %v", float64(alloc)/(1<<20), time.Since(start).Round(time.Millisecond))
	if alloc > hostileBudget {
		t.Errorf("allocated %d MB, more than the %d MB a hostile file may cost", alloc>>20, hostileBudget>>20)
	}
	return alloc
}

// writeST writes a safetensors file with the given JSON header and size
// bytes of data, the data as a hole (os.Truncate): sparse, so a 1 GiB
// tensor costs no disk.
func writeST(t *testing.T, path, header string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(header)))
	if _, err := f.Write(append(n[:], header...)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(8+len(header))+size); err != nil {
		t.Fatal(err)
	}
}

func writeConfig(t *testing.T, dir string, r int, alpha float64) {
	t.Helper()
	cfg := fmt.Sprintf(`{"peft_type":"LORA","r":%d,"lora_alpha":%g,"target_modules":["gate_proj"]}`, r, alpha)
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

const hostileModule = "base_model.model.model.layers.0.mlp.gate_proj"

// pairHeader is a header holding one BF16 pair, A [r, in] then B [out, r].
func pairHeader(r, in, out int64) (string, int64) {
	a, b := 2*r*in, 2*out*r
	return fmt.Sprintf(`{"%s.lora_A.weight":{"dtype":"BF16","shape":[%d,%d],"data_offsets":[0,%d]},"%s.lora_B.weight":{"dtype":"BF16","shape":[%d,%d],"data_offsets":[%d,%d]}}`,
		hostileModule, r, in, a, hostileModule, out, r, a, a+b), a + b
}

func hostileRun(t *testing.T, dir string, mode report.Mode) *Result {
	t.Helper()
	var res *Result
	measure(t, func() { res = run(t, dir, Options{Mode: mode, NoAutoReport: true}) })
	if _, err := json.Marshal(res); err != nil {
		t.Errorf("the result is not JSON: %v", err)
	}
	return res
}

// wantFinding asserts a failing verdict with a finding of code whose
// message holds msg.
func wantFinding(t *testing.T, o report.Outcome, code report.Code, sev report.Severity, msg string) {
	t.Helper()
	if o.Verdict != report.VerdictFail {
		t.Errorf("verdict %s, want fail", o.Verdict)
	}
	for _, f := range o.Findings {
		if f.Code == code && f.Severity == sev && strings.Contains(f.Message, msg) {
			return
		}
	}
	t.Errorf("no %s %s finding with %q among %v", sev, code, msg, o.Findings)
}

// TestHostileZeroWidthFactors: factors [r, 0] and [0, r] hold no byte, yet
// once made the exact audit allocate r × r Grams (1.34 GB and a pass at
// r = 8192, out of memory at 16384).
func TestHostileZeroWidthFactors(t *testing.T) {
	for _, r := range []int64{8192, 16384} {
		for _, mode := range report.Modes {
			t.Run(fmt.Sprintf("r=%d/%s", r, mode), func(t *testing.T) {
				dir := t.TempDir()
				h, size := pairHeader(r, 0, 0)
				writeST(t, filepath.Join(dir, "adapter_model.safetensors"), h, size)
				writeConfig(t, dir, int(r), float64(r))
				res := hostileRun(t, dir, mode)
				wantFinding(t, res.Outcome, report.ShapeMismatch, report.Fail, "has no elements")
				if len(res.Matrices) != 1 || res.Matrices[0].Skipped != "empty" {
					t.Errorf("the pair is not reported as skipped: %+v", res.Matrices)
				}
			})
		}
	}
}

// TestHostileThinFactors: factors [4096, 1] and [1, 4096] hold 16 KB but
// would need 800 MB of Grams: beyond what their bytes justify.
func TestHostileThinFactors(t *testing.T) {
	for _, r := range []int64{4096, 8192} {
		t.Run(fmt.Sprint(r), func(t *testing.T) {
			dir := t.TempDir()
			h, size := pairHeader(r, 1, 1)
			writeST(t, filepath.Join(dir, "adapter_model.safetensors"), h, size)
			writeConfig(t, dir, int(r), float64(r))
			res := hostileRun(t, dir, report.ModeExact)
			wantFinding(t, res.Outcome, report.LimitExceeded, report.Fail, "not checked")
			if m := res.Matrices[0]; m.Sigma != nil {
				t.Errorf("a spectrum was computed: %+v", m)
			}
		})
	}
	if err := spectral.GramAllowed(256, 0); err != nil {
		t.Errorf("r = 256 refused: %v", err)
	}
}

// TestHostileEmptyAdapter: nothing checked is not a pass, in any mode.
func TestHostileEmptyAdapter(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"no tensors": func(t *testing.T, path string) { writeST(t, path, `{}`, 0) },
		"100 MB of spaces": func(t *testing.T, path string) {
			writeST(t, path, "{"+strings.Repeat(" ", 100_000_000-2)+"}", 0)
		},
		"metadata only": func(t *testing.T, path string) { writeST(t, path, `{"__metadata__":{"format":"pt"}}`, 0) },
		"only extra tensors": func(t *testing.T, path string) {
			writeST(t, path, `{"x.weight":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4)
		},
	}
	for name, mk := range cases {
		for _, mode := range report.Modes {
			t.Run(name+"/"+string(mode), func(t *testing.T) {
				dir := t.TempDir()
				mk(t, filepath.Join(dir, "adapter_model.safetensors"))
				writeConfig(t, dir, 8, 8)
				res := hostileRun(t, dir, mode)
				wantFinding(t, res.Outcome, report.PairMissing, report.Fail, "no LoRA pair")
			})
		}
	}
}

// TestHostileManyTensors: 1.5 M zero-size tensors in a 100 MB header once
// took 3 GB; the reader stops at safetensors.MaxTensors.
func TestHostileManyTensors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "adapter_model.safetensors")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	const size = 100_000_000
	var hdr [8]byte
	binary.LittleEndian.PutUint64(hdr[:], size)
	w.Write(hdr[:])
	w.WriteByte('{')
	n, written := 0, 1
	for {
		e := fmt.Sprintf(`"x.%d.weight":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}`, n)
		if written+len(e)+2 > size {
			break
		}
		if n > 0 {
			w.WriteByte(',')
			written++
		}
		w.WriteString(e)
		written += len(e)
		n++
	}
	w.WriteString(strings.Repeat(" ", size-written-1))
	w.WriteByte('}')
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeConfig(t, dir, 8, 8)
	t.Logf("%d tensors in a %d-byte header", n, size)
	res := hostileRun(t, dir, report.ModeQuick)
	wantFinding(t, res.Outcome, report.LimitExceeded, report.Fail, "more than 100000 tensors (MaxTensors)")
}

// TestHostileManyShards: an index naming a million shards once took 2 GB.
func TestHostileManyShards(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString(`{"metadata":{},"weight_map":{`)
	for i := 0; i < 1_000_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"t%d.weight":"s%d.safetensors"`, i, i)
	}
	b.WriteString(`}}`)
	if err := os.WriteFile(filepath.Join(dir, "adapter_model.safetensors.index.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, 8, 8)
	res := hostileRun(t, dir, report.ModeQuick)
	wantFinding(t, res.Outcome, report.LimitExceeded, report.Fail, "more than 1024 shard files (MaxShards)")
}

// TestHostileHugeReport: an extraction report listing a million matrices
// once took 1.6 GB.
func TestHostileHugeReport(t *testing.T) {
	dir := t.TempDir()
	h, size := pairHeader(1, 1, 1)
	writeST(t, filepath.Join(dir, "adapter_model.safetensors"), h, size)
	writeConfig(t, dir, 1, 1)
	var b strings.Builder
	b.WriteString(`{"format":"clef-extraction-report/1","matrices":[`)
	for i := 0; i < 1_000_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"module":"m.%d","shape":[1,1],"singular_values":[1]}`, i)
	}
	b.WriteString(`]}`)
	if err := os.WriteFile(filepath.Join(dir, "extraction-report.json"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var res *Result
	measure(t, func() { res = run(t, dir, Options{Mode: report.ModeQuick}) })
	wantFinding(t, res.Outcome, report.LimitExceeded, report.Fail, "more than 50000 matrices")
}

// TestHostileSparseTensor: a factor whose header declares 512 MiB (a hole in
// a sparse file) is streamed: memory stays flat. (The 4 GiB one
// behaves the same and takes eight times as long.)
func TestHostileSparseTensor(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 512 MiB")
	}
	dir := t.TempDir()
	const r, in, out = 8, 1 << 25, 16 // A: 8 × 2²⁵ bf16 = 512 MiB
	h, size := pairHeader(r, in, out)
	writeST(t, filepath.Join(dir, "adapter_model.safetensors"), h, size)
	writeConfig(t, dir, r, r)
	res := hostileRun(t, dir, report.ModeQuick)
	if res.Verdict == report.VerdictError || len(res.Matrices) != 1 || res.Matrices[0].Skipped != "" {
		t.Errorf("the pair was not scanned: %s %+v %v", res.Verdict, res.Matrices, res.Findings)
	}
}

// TestHostileHeaderLengthNotQuoted: a shard that is a text file (a
// symlink to /etc/passwd) reads as a huge header length, which is its
// first eight bytes: the message must not quote them.
func TestHostileHeaderLengthNotQuoted(t *testing.T) {
	dir := t.TempDir()
	text := "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
	if err := os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, 8, 8)
	res := hostileRun(t, dir, report.ModeQuick)
	wantFinding(t, res.Outcome, report.HeaderInvalid, report.Fail, fmt.Sprintf("exceeds the file size (%d bytes)", len(text)))
	raw := fmt.Sprint(binary.LittleEndian.Uint64([]byte(text)))
	for _, f := range res.Findings {
		if strings.Contains(f.Message, raw) || strings.Contains(f.Message, "root") {
			t.Errorf("the message quotes the file: %s", f.Message)
		}
	}
}

// TestHostileHugeAlpha: lora_alpha 1e300 makes the spectrum overflow:
// non-finite figures must not reach the JSON, and say so.
func TestHostileHugeAlpha(t *testing.T) {
	a := load(t)
	a.config["lora_alpha"] = 1e300
	a.report = nil
	dir := a.write(t, 1)
	for _, mode := range []report.Mode{report.ModeExact, report.ModeRandomized} {
		res := run(t, dir, Options{Mode: mode, NoAutoReport: true})
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("%s: the result is not JSON: %v", mode, err)
		}
		if strings.Contains(string(b), "Inf") || strings.Contains(string(b), "NaN") {
			t.Errorf("%s: non-finite figures in the JSON", mode)
		}
		wantFinding(t, res.Outcome, report.ValuesNonfinite, report.Fail, "not finite")
	}
}
