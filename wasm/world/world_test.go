package world

import (
	"crypto/sha256"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvit-s/clefcheck/wasm/claims"
)

func TestDemoArchIsDemoProfile(t *testing.T) {
	p, err := claims.Builtin("demo")
	if err != nil {
		t.Fatal(err)
	}
	if err := Demo.Profile(p); err != nil {
		t.Fatal(err)
	}
	// A different architecture is told apart.
	other := Demo
	other.Intermediate++
	if err := other.Profile(p); err == nil {
		t.Error("a different module table matched the profile")
	}
}

func hashTree(t *testing.T, dir string) map[string][32]byte {
	out := map[string][32]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = sha256.Sum256(data)
		return nil
	})
	return out
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	for _, x := range []struct {
		dir  string
		seed uint64
	}{{a, 7}, {b, 7}, {c, 8}} {
		if err := Generate(x.dir, x.seed); err != nil {
			t.Fatal(err)
		}
	}
	ha, hb, hc := hashTree(t, a), hashTree(t, b), hashTree(t, c)
	if len(ha) < 10 {
		t.Fatalf("only %d files", len(ha))
	}
	for k, v := range ha {
		if hb[k] != v {
			t.Errorf("%s differs between two runs with the same seed", k)
		}
	}
	if hc["adapter/adapter_model.safetensors"] == ha["adapter/adapter_model.safetensors"] {
		t.Error("another seed gave the same adapter")
	}
}

// TestOrthoCols checks the twin's factors: the chosen columns are
// orthonormal, for every dimension of the real module table.
func TestOrthoCols(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range []int{48, 1024, 5120, 6144, 17408} {
		n := min(m, 24)
		o := newOrthoCols(rng, m, n)
		for a := 0; a < n; a++ {
			for b := a; b < n; b++ {
				s := 0.0
				for i := 0; i < m; i++ {
					s += o.at(i, a) * o.at(i, b)
				}
				want := 0.0
				if a == b {
					want = 1
				}
				if math.Abs(s-want) > 1e-12 {
					t.Fatalf("m=%d: column %d·%d = %g", m, a, b, s)
				}
			}
		}
	}
}

func TestExtractRecoversLowRank(t *testing.T) {
	// Base zero, tuned = a rank-2 matrix: the factors rebuild it to bf16 precision.
	out, in, r := 12, 10, 4
	w := make([]float32, out*in)
	tu := make([]float32, out*in)
	for i := 0; i < out; i++ {
		for j := 0; j < in; j++ {
			tu[i*in+j] = float32(float64(i+1)*float64(j%3) + 0.5*float64(i%2)*float64(j))
		}
	}
	a, b, x := Extract(w, tu, out, in, r)
	if x.SingularValues[2] > 1e-9*x.SingularValues[0] || x.SingularValues[1] == 0 {
		t.Errorf("rank-2 matrix has σ = %v", x.SingularValues)
	}
	if *x.RebuiltRelError > 1.0/128 {
		t.Errorf("rebuilt relative error %g", *x.RebuiltRelError)
	}
	if len(a) != r*in || len(b) != out*r {
		t.Errorf("factor sizes %d %d", len(a), len(b))
	}
}
