//go:build js && wasm

package msg

import (
	"syscall/js"
	"unsafe"
)

// bytesOf is x's memory as bytes (WebAssembly is little-endian, as
// Float64Array is here).
func bytesOf(x []float64) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 8*len(x))
}

// floats is the values of xs, one after the other, as a Float64Array
// (copied once as bytes: a number at a time through syscall/js costs a
// call each).
func floats(xs [][]float64) js.Value {
	n := 0
	for _, x := range xs {
		n += len(x)
	}
	u := js.Global().Get("Uint8Array").New(8 * n)
	off := 0
	for _, x := range xs {
		if len(x) > 0 {
			js.CopyBytesToJS(u.Call("subarray", off, off+8*len(x)), bytesOf(x))
			off += 8 * len(x)
		}
	}
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
	all := make([]float64, total)
	js.CopyBytesToGo(bytesOf(all), js.Global().Get("Uint8Array").New(arr.Get("buffer"), arr.Get("byteOffset"), 8*total))
	out := make([][]float64, n)
	off := 0
	for i, l := range cut {
		if l > 0 {
			out[i] = all[off : off+l : off+l]
			off += l
		}
	}
	return out
}
