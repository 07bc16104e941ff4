//go:build js && wasm

package msg

import (
	"encoding/binary"
	"math"
	"syscall/js"
)

// floats is the values of xs, one after the other, as a Float64Array
// (copied once as bytes: a number at a time through syscall/js costs a
// call each).
func floats(xs [][]float64) js.Value {
	n := 0
	for _, x := range xs {
		n += len(x)
	}
	b := make([]byte, 8*n)
	i := 0
	for _, x := range xs {
		for _, v := range x {
			binary.LittleEndian.PutUint64(b[i:], math.Float64bits(v))
			i += 8
		}
	}
	u := js.Global().Get("Uint8Array").New(len(b))
	js.CopyBytesToJS(u, b)
	return js.Global().Get("Float64Array").New(u.Get("buffer"))
}

// refsOf reads what floats wrote, cut at lens, for n modules: nil unless
// arr is a Float64Array and lens n non-negative lengths that add up to its
// length (a message that does not fit carries no references).
func refsOf(arr, lens js.Value, n int) [][]float64 {
	if !arr.Truthy() || !lens.Truthy() || !arr.InstanceOf(js.Global().Get("Float64Array")) || lens.Length() != n {
		return nil
	}
	total := arr.Length()
	cut := make([]int, n)
	sum := 0
	for i := range cut {
		l := lens.Index(i)
		if l.Type() != js.TypeNumber || l.Int() < 0 || l.Int() > total-sum {
			return nil
		}
		cut[i] = l.Int()
		sum += cut[i]
	}
	if sum != total {
		return nil
	}
	b := make([]byte, 8*total)
	js.CopyBytesToGo(b, js.Global().Get("Uint8Array").New(arr.Get("buffer"), arr.Get("byteOffset"), 8*total))
	out := make([][]float64, n)
	off := 0
	for i, l := range cut {
		if l == 0 {
			continue
		}
		out[i] = make([]float64, l)
		for k := range out[i] {
			out[i][k] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*(off+k):]))
		}
		off += l
	}
	return out
}
