package report

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

//go:generate go test -run TestCodesDoc -update

var update = flag.Bool("update", false, "rewrite wasm/CODES.md")

// codeConstants are the Code constants declared in this package's files.
func codeConstants(t *testing.T) map[Code]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[Code]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || vs.Type == nil {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				return true
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Errorf("%s: the code %s is not a string literal", f, name.Name)
					continue
				}
				out[Code(strings.Trim(lit.Value, `"`))] = name.Name
			}
			return true
		})
	}
	return out
}

// TestCodesDocumented: every Code constant has one entry in Codes, every
// entry is a declared code, and each says when, what to do, and where the
// contract defines it; the codes this project adds are listed in
// wasm/FORMATS.md, and wasm/FORMATS.md lists no code the table lacks.
func TestCodesDocumented(t *testing.T) {
	consts := codeConstants(t)
	if len(consts) < 25 {
		t.Fatalf("found only %d Code constants: the parser missed some", len(consts))
	}
	seen := map[Code]bool{}
	for _, d := range Codes {
		if seen[d.Code] {
			t.Errorf("%s documented twice", d.Code)
		}
		seen[d.Code] = true
		if _, ok := consts[d.Code]; !ok {
			t.Errorf("%s is documented but no constant declares it", d.Code)
		}
		if d.When == "" || d.Fix == "" || d.Severity == "" || (d.Source != srcFormats && d.Source != srcOurs) {
			t.Errorf("%s: incomplete entry %+v", d.Code, d)
		}
		if len(d.When) > 300 || len(d.Fix) > 300 {
			t.Errorf("%s: text over 300 bytes would be clipped in Markdown", d.Code)
		}
	}
	for c, name := range consts {
		if !seen[c] {
			t.Errorf("the constant %s (%s) has no entry in Codes", name, c)
		}
	}
	formats, err := os.ReadFile("../FORMATS.md")
	if err != nil {
		t.Fatal(err)
	}
	// The codes table is the first table under "## Finding codes".
	section := string(formats)
	if i := strings.Index(section, "## Finding codes"); i >= 0 {
		section = section[i:]
		if j := strings.Index(section[3:], "\n## "); j >= 0 {
			section = section[:j+3]
		}
	} else {
		t.Fatal("wasm/FORMATS.md has no Finding codes section")
	}
	listed := map[Code]bool{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `") {
			listed[Code(strings.SplitN(line[3:], "`", 2)[0])] = true
		}
	}
	for _, d := range Codes {
		if d.Source == srcOurs && !listed[d.Code] {
			t.Errorf("%s is this project's code but wasm/FORMATS.md does not list it", d.Code)
		}
	}
	for c := range listed {
		if !seen[c] {
			t.Errorf("wasm/FORMATS.md lists %s, which Codes lacks", c)
		}
	}
	if _, ok := DocOf(PairMissing); !ok {
		t.Error("DocOf(pair.missing) not found")
	}
	if _, ok := DocOf("no.such"); ok {
		t.Error("DocOf found an unknown code")
	}
}

// TestCodesDoc: wasm/CODES.md is CodesMarkdown (go generate rewrites it).
func TestCodesDoc(t *testing.T) {
	const path = "../CODES.md"
	want := CodesMarkdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("wasm/CODES.md is out of date (%v): run go generate ./wasm/report", err)
	}
	for _, d := range Codes {
		if !strings.Contains(want, "`"+string(d.Code)+"`") {
			t.Errorf("CODES.md lacks %s", d.Code)
		}
	}
}

func TestCountPluralCSV(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 550272: "550,272", 700366848: "700,366,848", -1234567: "-1,234,567"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
	if Plural(1, "Web Worker") != "1 Web Worker" || Plural(2, "Web Worker") != "2 Web Workers" || Plural(0, "pair") != "0 pairs" {
		t.Errorf("Plural: %q %q", Plural(1, "Web Worker"), Plural(2, "Web Worker"))
	}
	got := CSV([]string{"module", "σ₁"}, [][]string{
		{"a,b", `say "hi"`},
		{"line\nbreak", "cr\rhere"},
		{"=HYPERLINK(1)", "-0.5"},
		{"-1.5e-3", "@x"},
		{"", "plain"},
	})
	want := "module,σ₁\r\n" +
		"\"a,b\",\"say \"\"hi\"\"\"\r\n" +
		"\"line\nbreak\",\"cr\rhere\"\r\n" +
		"'=HYPERLINK(1),-0.5\r\n" +
		"-1.5e-3,'@x\r\n" +
		",plain\r\n"
	if got != want {
		t.Errorf("CSV:\n%q\nwant\n%q", got, want)
	}
}
