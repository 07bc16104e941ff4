package dtype

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
)

// ref decodes a binary floating-point bit pattern with ebits exponent bits
// and mbits mantissa bits from first principles, in float64.
func ref(bits uint32, ebits, mbits uint) float64 {
	sign := 1.0
	if bits>>(ebits+mbits)&1 == 1 {
		sign = -1
	}
	e := int(bits >> mbits & (1<<ebits - 1))
	m := float64(bits & (1<<mbits - 1))
	bias := 1<<(ebits-1) - 1
	switch e {
	case 0:
		return sign * m * math.Pow(2, float64(1-bias)-float64(mbits))
	case 1<<ebits - 1:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * (1 + m/float64(uint(1)<<mbits)) * math.Pow(2, float64(e-bias))
}

func same(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b && math.Signbit(a) == math.Signbit(b)
}

func TestAllHalfPatterns(t *testing.T) {
	for _, c := range []struct {
		dt           string
		ebits, mbits uint
	}{{"BF16", 8, 7}, {"F16", 5, 10}} {
		src := make([]byte, 2*65536)
		for i := 0; i < 65536; i++ {
			binary.LittleEndian.PutUint16(src[2*i:], uint16(i))
		}
		d32 := make([]float32, 65536)
		d64 := make([]float64, 65536)
		nf32, err := Decode32(c.dt, src, d32)
		if err != nil {
			t.Fatal(err)
		}
		nf64, _ := Decode64(c.dt, src, d64)
		want := 0
		for i := 0; i < 65536; i++ {
			r := ref(uint32(i), c.ebits, c.mbits)
			if math.IsNaN(r) || math.IsInf(r, 0) {
				want++
			}
			if !same(float64(d32[i]), r) || !same(d64[i], r) {
				t.Fatalf("%s %#04x: got %v / %v, want %v", c.dt, i, d32[i], d64[i], r)
			}
		}
		// 2 infinities + 2·(2^mbits − 1) NaNs.
		if nf32 != want || nf64 != want || want != 2+2*(1<<c.mbits-1) {
			t.Errorf("%s non-finite: %d, %d, want %d", c.dt, nf32, nf64, want)
		}
	}
}

func TestRoundBF16(t *testing.T) {
	// Every bf16 value round-trips; midpoints round to even.
	for i := 0; i < 65536; i++ {
		f := BF16ToF32(uint16(i))
		if math.IsNaN(float64(f)) {
			if !math.IsNaN(float64(BF16ToF32(F32ToBF16(f)))) {
				t.Fatalf("NaN %#04x lost", i)
			}
			continue
		}
		if got := F32ToBF16(f); got != uint16(i) {
			t.Fatalf("%#04x → %v → %#04x", i, f, got)
		}
	}
	one := float32(1)
	half := math.Float32frombits(math.Float32bits(one) + 0x8000) // 1 + 2^-8: midpoint
	if RoundBF16(half) != 1 {
		t.Errorf("midpoint above 1 rounds to %v, want 1 (even)", RoundBF16(half))
	}
	next := math.Float32frombits(math.Float32bits(one) + 0x18000) // midpoint above odd
	if got, want := RoundBF16(next), BF16ToF32(0x3f82); got != want {
		t.Errorf("odd midpoint rounds to %v, want %v", got, want)
	}
}

func TestIntegersAndWide(t *testing.T) {
	le := binary.LittleEndian
	var b []byte
	b = le.AppendUint64(b, math.Float64bits(-2.5))
	b = le.AppendUint64(b, math.Float64bits(math.Inf(-1)))
	d := make([]float64, 2)
	nf, err := Decode64("F64", b, d)
	if err != nil || d[0] != -2.5 || nf != 1 {
		t.Errorf("F64: %v %d %v", d, nf, err)
	}
	ints, err := Ints("I32", le.AppendUint32(le.AppendUint32(nil, 7), math.MaxUint32))
	if err != nil || ints[0] != 7 || ints[1] != -1 {
		t.Errorf("I32: %v %v", ints, err)
	}
	f := make([]float32, 2)
	if _, err := Decode32("I8", []byte{0xff, 3}, f); err != nil || f[0] != -1 || f[1] != 3 {
		t.Errorf("I8: %v %v", f, err)
	}
	if _, err := Decode32("F8_E4M3", []byte{1}, f); err == nil {
		t.Error("F8 decoded")
	}
	if _, err := Decode32("BF16", []byte{1, 2, 3}, f); err == nil {
		t.Error("odd byte count accepted")
	}
}

func TestULP(t *testing.T) {
	for _, c := range []struct {
		w    float32
		want float64
	}{{1, 1.0 / 128}, {1.5, 1.0 / 128}, {2, 1.0 / 64}, {-0.75, 1.0 / 256}, {0, math.Ldexp(1, -133)}} {
		if got := ULPBF16(c.w); got != c.want {
			t.Errorf("ulp(%v) = %v, want %v", c.w, got, c.want)
		}
		// The next bf16 value above |w| is |w| + ulp for normal w.
		if c.w != 0 {
			a := float32(math.Abs(float64(c.w)))
			if next := BF16ToF32(F32ToBF16(a) + 1); float64(next-a) != c.want {
				t.Errorf("spacing at %v = %v, want %v", a, next-a, c.want)
			}
		}
	}
}

// TestBF16KernelHook: an installed kernel decodes the bulk (whole groups
// of 8), the portable loop the tail, with the same values and count.
func TestBF16KernelHook(t *testing.T) {
	src := make([]byte, 2*21)
	for i := 0; i < 21; i++ {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(0x3f80+i*37))
	}
	binary.LittleEndian.PutUint16(src[2*3:], 0x7fc0)  // NaN in the bulk
	binary.LittleEndian.PutUint16(src[2*20:], 0xff80) // −Inf in the tail
	want := make([]float32, 21)
	wnf, _ := Decode32("BF16", src, want)
	var sizes []int
	DecodeKernels.Install("counted", func(s []byte, d []float32) (nf int) {
		sizes = append(sizes, len(d))
		for i := range d {
			d[i] = BF16ToF32(binary.LittleEndian.Uint16(s[2*i:]))
			if f := float64(d[i]); math.IsNaN(f) || math.IsInf(f, 0) {
				nf++
			}
		}
		return nf
	})
	defer DecodeKernels.Reset()
	got := make([]float32, 21)
	nf, _ := Decode32("BF16", src, got)
	if fmt.Sprint(sizes) != "[16]" || nf != wnf || wnf != 2 {
		t.Fatalf("kernel got %v values, %d non-finite (want %d)", sizes, nf, wnf)
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Errorf("value %d: %x, want %x", i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}
