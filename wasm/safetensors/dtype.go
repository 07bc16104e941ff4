package safetensors

// Bits per element of every dtype the format defines. Sub-byte types (F4, F6)
// are accepted when a tensor's total bit count is a whole number of bytes.
var dtypeBits = map[string]uint64{
	"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"I16": 16, "U16": 16, "F16": 16, "BF16": 16,
	"I32": 32, "U32": 32, "F32": 32,
	"I64": 64, "U64": 64, "F64": 64, "C64": 64,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}

// DTypeBits returns the bits per element of a dtype name, and whether it is known.
func DTypeBits(dtype string) (uint64, bool) {
	b, ok := dtypeBits[dtype]
	return b, ok
}
