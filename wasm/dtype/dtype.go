package dtype

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/x448/float16"
)

// Size returns the bytes per element of a decodable dtype, or 0.
func Size(dt string) int {
	switch dt {
	case "BOOL", "U8", "I8":
		return 1
	case "BF16", "F16", "I16", "U16":
		return 2
	case "F32", "I32", "U32":
		return 4
	case "F64", "I64", "U64":
		return 8
	}
	return 0
}

// Decodable reports whether the engine can decode dt.
func Decodable(dt string) bool { return Size(dt) > 0 }

// BF16ToF32 widens a bfloat16 bit pattern.
func BF16ToF32(b uint16) float32 { return math.Float32frombits(uint32(b) << 16) }

// F32ToBF16 rounds a float32 to the nearest bfloat16, ties to even, as torch
// does; NaN stays NaN (quiet).
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// RoundBF16 rounds x to the nearest bfloat16 value, returned as float32.
func RoundBF16(x float32) float32 { return BF16ToF32(F32ToBF16(x)) }

// Decode32 decodes src (n elements of dt) into dst[:n] as float32 and returns
// the number of non-finite values found. dst must hold n values.
func Decode32(dt string, src []byte, dst []float32) (nonfinite int, err error) {
	sz := Size(dt)
	if sz == 0 {
		return 0, fmt.Errorf("dtype: cannot decode %s", dt)
	}
	n := len(src) / sz
	if len(src)%sz != 0 || len(dst) < n {
		return 0, fmt.Errorf("dtype: %d bytes of %s into %d values", len(src), dt, len(dst))
	}
	dst = dst[:n]
	switch dt {
	case "BF16":
		if k, portable := DecodeKernels.Current(); !portable && n >= 8 {
			bulk := n / 8 * 8
			nonfinite = k(src[:2*bulk], dst[:bulk])
			src, dst = src[2*bulk:], dst[bulk:]
		}
		nonfinite += decodeBF16Portable(src, dst)
	case "F16":
		for i := range dst {
			h := binary.LittleEndian.Uint16(src[2*i:])
			if h&0x7c00 == 0x7c00 {
				nonfinite++
			}
			dst[i] = float16.Frombits(h).Float32()
		}
	case "F32":
		for i := range dst {
			u := binary.LittleEndian.Uint32(src[4*i:])
			if u&0x7f800000 == 0x7f800000 {
				nonfinite++
			}
			dst[i] = math.Float32frombits(u)
		}
	default:
		tmp := make([]float64, 1)
		for i := range dst {
			nf, _ := Decode64(dt, src[i*sz:(i+1)*sz], tmp)
			nonfinite += nf
			dst[i] = float32(tmp[0])
		}
	}
	return nonfinite, nil
}

// Decode64 decodes src into dst as float64; see Decode32.
func Decode64(dt string, src []byte, dst []float64) (nonfinite int, err error) {
	sz := Size(dt)
	if sz == 0 {
		return 0, fmt.Errorf("dtype: cannot decode %s", dt)
	}
	n := len(src) / sz
	if len(src)%sz != 0 || len(dst) < n {
		return 0, fmt.Errorf("dtype: %d bytes of %s into %d values", len(src), dt, len(dst))
	}
	dst = dst[:n]
	le := binary.LittleEndian
	for i := range dst {
		b := src[i*sz:]
		var v float64
		switch dt {
		case "BF16":
			v = float64(math.Float32frombits(uint32(le.Uint16(b)) << 16))
		case "F16":
			v = float64(float16.Frombits(le.Uint16(b)).Float32())
		case "F32":
			v = float64(math.Float32frombits(le.Uint32(b)))
		case "F64":
			v = math.Float64frombits(le.Uint64(b))
		case "BOOL", "U8":
			v = float64(b[0])
		case "I8":
			v = float64(int8(b[0]))
		case "I16":
			v = float64(int16(le.Uint16(b)))
		case "U16":
			v = float64(le.Uint16(b))
		case "I32":
			v = float64(int32(le.Uint32(b)))
		case "U32":
			v = float64(le.Uint32(b))
		case "I64":
			v = float64(int64(le.Uint64(b)))
		case "U64":
			v = float64(le.Uint64(b))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			nonfinite++
		}
		dst[i] = v
	}
	return nonfinite, nil
}

// Ints decodes an integer tensor (I32, I64, U8, ...) exactly.
func Ints(dt string, src []byte) ([]int64, error) {
	le := binary.LittleEndian
	sz := Size(dt)
	if sz == 0 || len(src)%sz != 0 {
		return nil, fmt.Errorf("dtype: cannot decode %d bytes of %s as integers", len(src), dt)
	}
	out := make([]int64, len(src)/sz)
	for i := range out {
		b := src[i*sz:]
		switch dt {
		case "U8", "BOOL":
			out[i] = int64(b[0])
		case "I8":
			out[i] = int64(int8(b[0]))
		case "I16":
			out[i] = int64(int16(le.Uint16(b)))
		case "U16":
			out[i] = int64(le.Uint16(b))
		case "I32":
			out[i] = int64(int32(le.Uint32(b)))
		case "U32":
			out[i] = int64(le.Uint32(b))
		case "I64":
			out[i] = int64(le.Uint64(b))
		default:
			return nil, fmt.Errorf("dtype: %s is not an integer type", dt)
		}
	}
	return out, nil
}

// EncodeBF16 appends xs as little-endian bfloat16.
func EncodeBF16(dst []byte, xs []float32) []byte {
	for _, x := range xs {
		dst = binary.LittleEndian.AppendUint16(dst, F32ToBF16(x))
	}
	return dst
}

// EncodeF32 appends xs as little-endian float32.
func EncodeF32(dst []byte, xs []float32) []byte {
	for _, x := range xs {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// ULPBF16 is the spacing of bfloat16 numbers at w: 2^(exponent(w) − 7) for a
// normal w, the subnormal spacing 2^−133 below the normal range.
func ULPBF16(w float32) float64 {
	u := math.Float32bits(w)
	e := int((u >> 23) & 0xff)
	if e == 0 {
		return math.Ldexp(1, -126-7)
	}
	return math.Ldexp(1, e-127-7)
}
