package wasmsimd

// The names the module exports its functions under (what the glue in
// wasm/browser/worker looks up in the instance's exports).
const (
	Apply4     = "apply4"
	Scan       = "scan"
	Apply4Cols = "apply4cols"
	ColSq      = "colsq"
	RowSq      = "rowsq"
	Decode     = "decode"
	Dots       = "dots"
	Gram       = "gram"
	SHA256     = "sha256"
	Rows       = "rows"
	Cols       = "cols"
)

// Func is one exported function: its name and how many i32 parameters it
// takes (it returns nothing).
type Func struct {
	Name   string
	Params int
	body   func(fused bool) []byte
}

// plain is a body with no multiply-add to fuse.
func plain(body func() []byte) func(bool) []byte { return func(bool) []byte { return body() } }

// Funcs are the module's functions, in function-index order (fewer than
// 128, names under 128 bytes: Module writes the counts as single bytes).
var Funcs = []Func{
	{Apply4, 5, apply4Body},
	{Scan, 3, plain(scanBody)},
	{Apply4Cols, 7, apply4ColsBody},
	{ColSq, 4, plain(colSqBody)},
	{RowSq, 4, plain(rowSqBody)},
	{Decode, 4, plain(decodeBody)},
	{Dots, 6, plain(dotsBody)},
	{Gram, 4, gramBody},
	{SHA256, 3, plain(sha256Body)},
	{Rows, 6, plain(rowsBody)},
	{Cols, 6, plain(colsBody)},
}

// Section ids (the WebAssembly core spec, 5.5), in the order they must
// appear.
const (
	secType     = 1
	secImport   = 2
	secFunction = 3
	secExport   = 7
	secCode     = 10
)

// Module returns the module's bytes: the Funcs, exported under their
// names, with byte addresses into the imported memory "env" "mem" (at
// least one page, no maximum). Its types are the distinct parameter
// counts, in the order of first use.
func Module() []byte { return module(false) }

// ModuleFMA is Module with the probes' and the Gram's multiply-adds as
// f32x4.relaxed_madd (the relaxed-SIMD proposal, in Chromium since 114):
// one instruction instead of two, fused where the machine has FMA, so its
// sums differ from Module's in rounding only. A browser without relaxed
// SIMD does not validate it.
func ModuleFMA() []byte { return module(true) }

func module(fused bool) []byte {
	section := func(id byte, content ...[]byte) []byte {
		var c []byte
		for _, x := range content {
			c = append(c, x...)
		}
		return append(append([]byte{id}, uleb(len(c))...), c...)
	}
	// The type section holds the distinct parameter counts, in order of
	// first use; the function section gives each function's type.
	types, funcs := []byte{0}, []byte{byte(len(Funcs))}
	var seen []int
	for _, f := range Funcs {
		t := 0
		for t < len(seen) && seen[t] != f.Params {
			t++
		}
		if t == len(seen) {
			seen = append(seen, f.Params)
			types = append(types, 0x60, byte(f.Params)) // func type: params, results
			for j := 0; j < f.Params; j++ {
				types = append(types, tI32)
			}
			types = append(types, 0)
		}
		funcs = append(funcs, byte(t))
	}
	types[0] = byte(len(seen))
	exports, code := []byte{byte(len(Funcs))}, []byte{byte(len(Funcs))}
	for i, f := range Funcs {
		exports = append(append(append(exports, byte(len(f.Name))), f.Name...), 0, byte(i)) // kind 0: a function
		code = append(code, f.body(fused)...)
	}
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	m = append(m, section(secType, types)...)
	// one import: module "env", name "mem", kind 2 (a memory), limits 0 (min only), min 1 page
	m = append(m, section(secImport, []byte{1, 3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0, 1})...)
	m = append(m, section(secFunction, funcs)...)
	m = append(m, section(secExport, exports)...)
	m = append(m, section(secCode, code)...)
	return m
}
