//go:build js && wasm

package worker

import (
	"context"
	"fmt"
	"hash"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall/js"
	"testing"
	"time"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/source"
	"github.com/kvit-s/clefcheck/wasm/spectral"
	"github.com/kvit-s/clefcheck/wasm/wasmsimd"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"
)

// Run with: GOOS=js GOARCH=wasm go test -exec "node scripts/wasm-node.js"
// ./wasm/browser (make test-wasm), which exposes the Go memory as the
// browser's worker.js does.

// kernels compiles the plain module or, fused, the relaxed-SIMD one
// (scripts/wasm-node.js turns relaxed SIMD on in Node 20, as Chromium has it).
func kernels(t testing.TB, fused bool) *simd {
	k, err := simdKernels(fused)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// relaxedSIMD reports whether this V8 validates the relaxed-SIMD module.
func relaxedSIMD() bool {
	code := wasmsimd.ModuleFMA()
	u8 := js.Global().Get("Uint8Array").New(len(code))
	js.CopyBytesToJS(u8, code)
	return js.Global().Get("WebAssembly").Call("validate", u8).Bool()
}

// TestSIMD: the kernels pass their checks and install; a wrong kernel does
// not pass them.
func TestSIMD(t *testing.T) {
	if !relaxedSIMD() {
		t.Fatal("this V8 does not validate the relaxed-SIMD module (scripts/wasm-node.js turns it on)")
	}
	if err := InstallSIMD(); err != nil {
		t.Fatalf("InstallSIMD: %v", err)
	}
	defer spectral.ProbeKernels.Reset()
	defer spectral.GramKernels.Reset()
	defer spectral.RowKernels.Reset()
	defer spectral.ColumnKernels.Reset()
	defer runner.SHA256.Reset()
	defer dtype.ScanKernels.Reset()
	defer dtype.DecodeKernels.Reset()
	defer blas32.Use(gonum.Implementation{})
	// Where relaxed SIMD validates, the fused module is the one installed.
	if spectral.ProbeKernels.Name() != "wasm-simd-fma" || spectral.GramKernels.Name() != "wasm-simd-fma" || runner.SHA256.Name() != "wasm-simd" {
		t.Fatalf("probe kernel %q, Gram kernel %q, SHA-256 %q", spectral.ProbeKernels.Name(), spectral.GramKernels.Name(), runner.SHA256.Name())
	}
	if spectral.RowKernels.Name() != "wasm-simd" || spectral.ColumnKernels.Name() != "wasm-simd" {
		t.Fatalf("row decode %q, column decode %q", spectral.RowKernels.Name(), spectral.ColumnKernels.Name())
	}
	for what, spoil := range map[string]func(k *simd){
		"apply4": func(k *simd) {
			f := k.probes.Apply4
			k.probes.Apply4 = func(x []float32, rows, r int, w, acc []float32) { f(x, rows, r, w, acc); acc[1] += 0.5 }
		},
		"apply4cols": func(k *simd) {
			f := k.probes.Apply4Cols
			k.probes.Apply4Cols = func(a []float32, r, n, j0, cols int, w, tt, acc []float32) {
				f(a, r, n, j0, cols, w, tt, acc)
				acc[len(acc)-1] -= 0.25
			}
		},
		"rowsq": func(k *simd) {
			f := k.probes.RowSquares
			k.probes.RowSquares = func(a []float32, r, n int, out []float64) { f(a, r, n, out); out[0] *= 1.01 }
		},
		"decode": func(k *simd) {
			f := k.decode
			k.decode = func(src []byte, dst []float32) int { return f(src, dst) - 1 }
		},
		"scan": func(k *simd) {
			f := k.scan
			k.scan = func(b []byte) (int, float64) { n, s := f(b); return n, s * 1.001 }
		},
		"sha256": func(k *simd) {
			f := k.sha256
			k.sha256 = func() hash.Hash { return &lastBitFlipped{Hash: f()} }
		},
		"gram": func(k *simd) {
			f := k.gram
			k.gram = func(p []float32, kk, stride int, g []float64) { f(p, kk, stride, g); g[stride+3] += 1e-3 }
		},
		"gram-last": func(k *simd) { // the last tile of the upper triangle
			f := k.gram
			k.gram = func(p []float32, kk, stride int, g []float64) { f(p, kk, stride, g); g[len(g)-1] *= 1.0001 }
		},
		"rows": func(k *simd) { // the second row's first value
			f := k.rows
			k.rows = func(src []byte, pitch int, p []float32, kk, n int) int {
				nf := f(src, pitch, p, kk, n)
				if kk > 1 {
					p[spectral.PanelAt(1, 0)]++
				}
				return nf
			}
		},
		"rows-count": func(k *simd) {
			f := k.rows
			k.rows = func(src []byte, pitch int, p []float32, kk, n int) int { return f(src, pitch, p, kk, n) + 1 }
		},
		"cols": func(k *simd) { // value (u = 5, t = 9): the second group of rows, the second eight columns
			f := k.cols
			k.cols = func(src []byte, pitch int, p []float32, rows, kk int) int {
				nf := f(src, pitch, p, rows, kk)
				if rows > 5 && kk > 9 {
					p[spectral.PanelAt(9, 5)] = 0.5
				}
				return nf
			}
		},
		"cols-count": func(k *simd) {
			f := k.cols
			k.cols = func(src []byte, pitch int, p []float32, rows, kk int) int { return f(src, pitch, p, rows, kk) - 1 }
		},
		"dots": func(k *simd) {
			f := k.blas.dots
			k.blas.dots = func(x []float32, rows, kk int, w []float32, n int, dst []float32) {
				f(x, rows, kk, w, n, dst)
				dst[len(dst)/2] += 0.01
			}
		},
	} {
		for _, fused := range []bool{false, true} {
			if err := kernels(t, fused).check(); err != nil {
				t.Fatalf("fused %v: %v", fused, err)
			}
			k := kernels(t, fused)
			spoil(k)
			if err := k.check(); err == nil {
				t.Errorf("a wrong %s (fused %v) passed the checks", what, fused)
			}
		}
	}
}

// TestSIMDProbe: the randomized check of an SVD-form pair at r = 256 gives
// the same figures with the SIMD kernels as with the portable loops.
func TestSIMDProbe(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const r, in, out = 256, 1000, 700
	a := make([]float32, r*in)
	b := make([]float32, out*r)
	for i := range a {
		a[i] = float32(rng.NormFloat64() * 0.01)
	}
	for i := range b {
		b[i] = float32(rng.NormFloat64() * 0.01)
	}
	want := spectral.Probe(a, b, r, in, out, 1, 0, 3, nil)
	for _, fused := range []bool{false, true} {
		spectral.ProbeKernels.Install(wasmSIMD, kernels(t, fused).probes)
		got := spectral.Probe(a, b, r, in, out, 1, 0, 3, nil)
		spectral.ProbeKernels.Reset()
		if math.Abs(got.BoundA-want.BoundA) > 1e-3*want.BoundA || math.Abs(got.BoundB-want.BoundB) > 1e-3*want.BoundB ||
			math.Abs(got.NormA-want.NormA) > 1e-6*want.NormA || math.Abs(got.NormB-want.NormB) > 1e-6*want.NormB {
			t.Errorf("SIMD (fused %v): bounds %g %g norms %g %g; portable: %g %g, %g %g", fused, got.BoundA, got.BoundB, got.NormA, got.NormB, want.BoundA, want.BoundB, want.NormA, want.NormB)
		}
	}
}

// A tensor's worth of bf16: the SIMD scan and decode against the portable ones.
func TestSIMDTensor(t *testing.T) {
	k := kernels(t, false)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 5120*256 + 24
	b := make([]byte, 2*n)
	for i := 0; i < len(b); i += 2 {
		v := uint16(math.Float32bits(float32(rng.NormFloat64()*0.02)) >> 16)
		if rng.IntN(100000) == 0 {
			v = 0x7f80 // +Inf
		}
		b[i], b[i+1] = byte(v), byte(v>>8)
	}
	bulk := len(b) / 16 * 16
	nf, ss := k.scan(b[:bulk])
	wnf, wss := dtype.ScanBF16(b[:bulk])
	if nf != wnf || math.Abs(ss-wss) > 1e-6*wss || wnf == 0 {
		t.Errorf("SIMD scan: %d non-finite, Σx² %g; portable: %d, %g", nf, ss, wnf, wss)
	}
	want := make([]float32, n)
	dnf, _ := dtype.Decode32("BF16", b, want)
	dtype.DecodeKernels.Install(wasmSIMD, k.decode)
	defer dtype.DecodeKernels.Reset()
	got := make([]float32, n)
	gnf, _ := dtype.Decode32("BF16", b, got)
	if gnf != dnf {
		t.Errorf("decode counts %d non-finite, portable %d", gnf, dnf)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("value %d: %x, want %x", i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}

func BenchmarkSIMD(b *testing.B) {
	k := kernels(b, false)
	rng := rand.New(rand.NewPCG(1, 3))
	const rows, r = 17408, 256
	x := make([]float32, rows*r)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	w, acc, t := make([]float32, r*4), make([]float32, r*4), make([]float32, 256*4)
	gfma := func(b *testing.B) {
		b.ReportMetric(float64(2*rows*r*4)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
	}
	// The probes' kernels of both modules, the plain one and the one with
	// fused multiply-adds (relaxed SIMD).
	for _, fused := range []bool{true, false} {
		kf := kernels(b, fused)
		name := map[bool]string{true: wasmSIMDFMA, false: wasmSIMD}[fused]
		b.Run("apply4/"+name, func(b *testing.B) {
			for b.Loop() {
				for i0 := 0; i0 < rows; i0 += 256 {
					kf.probes.Apply4(x[i0*r:(i0+256)*r], 256, r, w, acc)
				}
			}
			gfma(b)
		})
		b.Run("apply4cols/"+name, func(b *testing.B) { // A = x as 256 × 17408
			for b.Loop() {
				for j0 := 0; j0 < rows; j0 += 256 {
					kf.probes.Apply4Cols(x, r, rows, j0, 256, w, t, acc)
				}
			}
			gfma(b)
		})
	}
	b.Run("rowsq", func(b *testing.B) {
		out := make([]float64, r)
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			k.probes.RowSquares(x, r, rows, out)
		}
	})
	buf := make([]byte, 8<<20)
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			k.scan(buf)
		}
	})
	b.Run("decode", func(b *testing.B) {
		dst := make([]float32, len(buf)/2)
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			k.decode(buf, dst)
		}
	})
	// The demo model's largest product: 150 tokens × 192 outputs × 64 inputs.
	const m, n, kk = 150, 192, 64
	for name, impl := range map[string]blas.Float32{"sgemm-simd": k.blas, "sgemm-gonum": gonum.Implementation{}} {
		b.Run(name, func(b *testing.B) {
			c := make([]float32, m*n)
			for b.Loop() {
				impl.Sgemm(blas.NoTrans, blas.Trans, m, n, kk, 1, x[:m*kk], kk, x[:n*kk], kk, 0, c, n)
			}
			b.ReportMetric(float64(m*n*kk)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
		})
	}
}

// BenchmarkProbe: the randomized check of one rank-256 pair of the
// twin's shapes (spectral.Probe: 4 probes, 4 power steps), with the SIMD
// kernels and with the portable loops (V8 in Node, as in Chromium).
func BenchmarkProbe(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	const r = 256
	for _, d := range [][2]int{{5120, 5120}, {5120, 17408}, {17408, 5120}} {
		in, out := d[0], d[1]
		a, x := make([]float32, r*in), make([]float32, out*r)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for _, kern := range []string{wasmSIMDFMA, wasmSIMD, "portable"} {
			b.Run(fmt.Sprintf("%dx%d/%s", out, in, kern), func(b *testing.B) {
				if kern != "portable" {
					if err := installSIMD(kern == wasmSIMDFMA); err != nil {
						b.Skip(err)
					}
				}
				defer spectral.ProbeKernels.Reset()
				for b.Loop() {
					spectral.Probe(a, x, r, in, out, 1, 4, 1, nil)
				}
				// 4 probes, 4 power steps, two products per factor value
				b.ReportMetric(float64(2*4*spectral.PowerSteps)*float64(r*(in+out))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
			})
		}
	}
}

// TestFullTwinSIMD times one worker's engine with the SIMD kernels on the
// 1.40 GB twin in Node (set CLEFCHECK_FULL; make bench-browser makes the twin).
func TestFullTwinSIMD(t *testing.T) {
	full := os.Getenv("CLEFCHECK_FULL")
	if full == "" {
		t.Skip("set CLEFCHECK_FULL")
	}
	if err := InstallSIMD(); err != nil {
		t.Fatal(err)
	}
	defer spectral.ProbeKernels.Reset()
	defer dtype.ScanKernels.Reset()
	defer dtype.DecodeKernels.Reset()
	for _, o := range []audit.Options{{Mode: report.ModeQuick, Workers: 1}, {Mode: report.ModeRandomized, Workers: 1}, {Mode: report.ModeExact, Workers: 1}} {
		start := time.Now()
		res, err := audit.Run(context.Background(), source.Dir(filepath.Join(full, "adapter")), ".", o)
		if err != nil || res.Verdict == "fail" {
			t.Fatalf("%v %v", err, res.Findings)
		}
		grams := 0
		for _, m := range res.Matrices {
			if m.Method == "gram" {
				grams++
			}
		}
		t.Logf("%s audit, one goroutine, %s: %v (%d pairs by exact Gram) ", res.Summary.Mode, res.Summary.Kernel, time.Since(start).Round(10*time.Millisecond), grams)
	}
}

// BenchmarkGram: one full panel (64 rows) of a rank-256 pair, the SIMD
// kernel against the portable loop (V8 in Node, as in Chromium):
// GOOS=js GOARCH=wasm go test -run XXX -bench Gram -exec "node scripts/wasm-node.js" ./wasm/browser/worker
func BenchmarkGram(b *testing.B) {
	const stride = 256
	rng := rand.New(rand.NewPCG(3, 4))
	p := make([]float32, spectral.PanelRows*stride)
	for i := range p {
		p[i] = float32(rng.NormFloat64())
	}
	g := make([]float64, stride*stride)
	for name, f := range map[string]spectral.GramKernel{"portable": spectral.GramKernels.Portable(), "wasm-simd": kernels(b, false).gram, "wasm-simd-fma": kernels(b, true).gram} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				f(p, spectral.PanelRows, stride, g)
			}
			// multiply-adds of the upper triangle, per second
			b.ReportMetric(float64(b.N)*spectral.PanelRows*stride*(stride+1)/2/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// lastBitFlipped is a SHA-256 whose digests are wrong in their last bit.
type lastBitFlipped struct{ hash.Hash }

func (h *lastBitFlipped) Sum(b []byte) []byte {
	out := h.Hash.Sum(b)
	out[len(out)-1] ^= 1
	return out
}

// BenchmarkSHA256: the WebAssembly SHA-256 against crypto/sha256 compiled
// to wasm, on 16 MiB (V8 in Node, as in Chromium).
func BenchmarkSHA256(b *testing.B) {
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for name, f := range map[string]func() hash.Hash{"go": runner.SHA256.Portable(), "wasm": kernels(b, false).sha256} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			h := f()
			for i := 0; i < b.N; i++ {
				h.Reset()
				h.Write(data)
				h.Sum(nil)
			}
		})
	}
}
