package refs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// allocated runs f and returns the bytes it allocated in total.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func isLimit(err error) bool {
	var e *report.Error
	return errors.As(err, &e) && e.Code == report.LimitExceeded
}

const answerLine = `{"id":"r%d","options":["A","B"],"logits":[1,0],"probs":[0.7310585786,0.2689414214],"choice":"A"}` + "\n"

// TestHostileLongAnswers: an answers file of a million lines once took
// 2.1 GB; the readers stop at MaxLines (and at MaxLine for one line, and
// MaxRunBytes for all the files of a run).
func TestHostileLongAnswers(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	for i := 0; i < 1_000_000; i++ {
		fmt.Fprintf(&b, answerLine, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() error{
		"candidate": func() error { _, err := ReadAnswers(os.DirFS(dir), "."); return err },
		"reference": func() error { _, err := ReadReferenceAnswers(os.DirFS(dir), "."); return err },
	} {
		var err error
		n := allocated(func() { err = read() })
		t.Logf("%s: allocated %.1f MB: %v", name, float64(n)/(1<<20), err)
		if !isLimit(err) || !strings.Contains(err.Error(), "MaxLines") {
			t.Errorf("%s: %v, want the MaxLines limit", name, err)
		}
		if n > 256<<20 {
			t.Errorf("%s: allocated %d MB", name, n>>20)
		}
	}
	// One line longer than MaxLine.
	long := `{"id":"x","options":["` + strings.Repeat("A", MaxLine) + `"]}` + "\n"
	var err error
	n := allocated(func() {
		err = ReadJSONL(strings.NewReader(long), "long.jsonl", func(int, *Record) error { return nil })
	})
	if !isLimit(err) || !strings.Contains(err.Error(), "MaxLine") {
		t.Errorf("long line: %v", err)
	}
	if n > 64<<20 {
		t.Errorf("long line: allocated %d MB", n>>20)
	}
	// Many files sharing one run's budget.
	fsys := fstest.MapFS{}
	line := strings.Repeat(" ", 1<<20-1) + "\n"
	for i := 0; i < MaxRunBytes>>20+2; i++ {
		fsys[fmt.Sprintf("f%03d.jsonl", i)] = &fstest.MapFile{Data: []byte(line)}
	}
	if _, err := ReadAnswers(fsys, "."); !isLimit(err) || !strings.Contains(err.Error(), "MaxRunBytes") {
		t.Errorf("many files: %v", err)
	}
}

// TestHostileProbsNotDistribution: a reference whose probabilities are all
// 1.0 is refused on read; a candidate's is read (compare.Answers fails it).
func TestHostileProbsNotDistribution(t *testing.T) {
	fsys := fstest.MapFS{"a.jsonl": &fstest.MapFile{Data: []byte(`{"id":"q","options":["A","B","C","D"],"logits":[1,1,1,1],"probs":[1,1,1,1],"choice":"A"}` + "\n")}}
	if _, err := ReadReferenceAnswers(fsys, "."); err == nil || !strings.Contains(err.Error(), "not a distribution") {
		t.Errorf("reference: %v", err)
	}
	if as, err := ReadAnswers(fsys, "."); err != nil || len(as) != 1 {
		t.Errorf("candidate: %v %v", as, err)
	}
	for _, c := range []struct {
		p  []float64
		ok bool
	}{{[]float64{0.5, 0.5}, true}, {[]float64{0.3333333, 0.3333333, 0.3333333}, true}, {[]float64{1, 1}, false}, {[]float64{0.5, 0.4}, false}, {[]float64{1.2, -0.2}, false}} {
		if err := CheckDistribution(c.p); (err == nil) != c.ok {
			t.Errorf("%v: %v", c.p, err)
		}
	}
}

// seeds are the demo world's records and answers (testdata/), and a few
// lines that break the rules.
func seeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{"", "\n\n", "{}", `{"id":"x","options":[]}`, "{\"id\":1}\n{", strings.Repeat("[", 1000), `{"probs":[1e309]}`} {
		f.Add([]byte(s))
	}
}

// fuzzBound is the most a fuzzed input may make a reader allocate: the
// input many times over (JSON decoding), plus the scanner's buffer.
func fuzzBound(data []byte) uint64 { return uint64(len(data))*64 + 1<<20 }

func FuzzReadJSONLAnswers(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		var err error
		n := allocated(func() {
			_, err = ReadAnswers(fstest.MapFS{"a.jsonl": &fstest.MapFile{Data: data}}, ".")
		})
		if n > fuzzBound(data) {
			t.Fatalf("allocated %d bytes for %d (%v)", n, len(data), err)
		}
		_, _ = ReadReferenceAnswers(fstest.MapFS{"a.jsonl": &fstest.MapFile{Data: data}}, ".")
	})
}

func FuzzReadJSONLRecords(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := 0
		n := allocated(func() {
			_ = ReadJSONL(bytes.NewReader(data), "r.jsonl", func(line int, r *Record) error {
				lines++
				if len(r.Options) > MaxOptions {
					return fmt.Errorf("too many options")
				}
				return nil
			})
		})
		if n > fuzzBound(data) {
			t.Fatalf("allocated %d bytes for %d", n, len(data))
		}
		if lines > MaxLines {
			t.Fatalf("%d lines read", lines)
		}
	})
}
