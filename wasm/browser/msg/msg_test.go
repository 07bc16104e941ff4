package msg

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// ops are the Op constants declared in op.go, parsed (the typed messages
// build only for js/wasm; this test runs natively).
func ops(t *testing.T) map[string]bool {
	f, err := parser.ParseFile(token.NewFileSet(), "op.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok {
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out[s] = true
				}
			}
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("no ops in op.go")
	}
	return out
}

var opField = regexp.MustCompile(`\{op: "([a-z_]+)"`)

// TestDocListsEveryOp: the package documentation shows every op, and no
// other.
func TestDocListsEveryOp(t *testing.T) {
	known := ops(t)
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range opField.FindAllStringSubmatch(string(b), -1) {
		documented[m[1]] = true
		if !known[m[1]] {
			t.Errorf("doc.go documents op %q, which op.go does not declare", m[1])
		}
	}
	for op := range known {
		if !documented[op] {
			t.Errorf("op %q is not in doc.go's list", op)
		}
	}
}

// TestWorkerJS: what public/worker.js posts is in the protocol: an "error"
// with a msg, when engine.wasm does not load. It queues what comes before
// Go runs (clefcheckQueue, which Serve drains) and exposes the Go memory
// for the SIMD kernels (clefcheckMem).
func TestWorkerJS(t *testing.T) {
	b, err := os.ReadFile("../../../public/worker.js")
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	known := ops(t)
	posts := regexp.MustCompile(`postMessage\(\{ *op: "([a-z_]+)"((?:, *[a-z_]+:[^,}]+)*) *\}`).FindAllStringSubmatch(js, -1)
	if len(posts) == 0 {
		t.Fatal("worker.js posts nothing that looks like a message")
	}
	for _, m := range posts {
		if !known[m[1]] {
			t.Errorf("worker.js posts op %q, which is not in the protocol", m[1])
		}
		if m[1] == string(OpError) && !strings.Contains(m[2], "msg:") {
			t.Errorf("worker.js posts an error without msg: %s", m[0])
		}
	}
	for _, s := range []string{"self.clefcheckQueue", "self.clefcheckMem", "wasm/browser/msg"} {
		if !strings.Contains(js, s) {
			t.Errorf("worker.js does not mention %s", s)
		}
	}
}
