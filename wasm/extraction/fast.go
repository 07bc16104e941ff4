package extraction

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The fast reading of a report. encoding/json reads the real report's
// 1.2 MB of numbers in ~12 ms natively and ~60 ms in a browser's wasm
// (node, 2-core bench machine), 85-105 ms while the page's other workers
// run: the Decoder scans each matrix once to find its end and again to
// decode it, byte by byte, through reflection. Every audit with a report
// waits on that before its first read. decodeFast reads the common form of
// a report in one pass, the numbers through strconv.ParseFloat as
// encoding/json does (the same float64 for the same text), and hands every
// other value to encoding/json.
//
// It gives up (ok false) on anything it does not know to read exactly as
// encoding/json would: escapes in a key or a module name, a key that
// matches a field only up to case (encoding/json folds case), a key given
// twice, a value of another kind, a number out of float64's range, a limit
// reached, bytes after the report. Parse then reads the same bytes with
// encoding/json, which says what is wrong, so that no error and no figure
// depends on which reading ran: FuzzParseFast checks that whenever
// decodeFast reads a report, encoding/json reads the same one.

// matrixKeys are Matrix's JSON names.
var matrixKeys = []string{"module", "shape", "delta_fro", "singular_values", "residual_fro", "noise_fro", "residual_to_noise", "rebuilt_rel_error"}

type fastReader struct {
	b []byte
	i int
}

func (p *fastReader) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end.
func (p *fastReader) peek() byte {
	p.space()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *fastReader) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// literal eats the literal s (null, true, false).
func (p *fastReader) literal(s string) bool {
	p.space()
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// plainString reads a string without escapes or control characters, in
// valid UTF-8: its bytes are its value, as encoding/json would read it.
func (p *fastReader) plainString() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start, ascii := p.i, true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return "", false // encoding/json would put U+FFFD in
			}
			return string(s), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
		p.i++
	}
	return "", false
}

// number reads a JSON number (its grammar checked here: strconv.ParseFloat
// takes more, such as "Inf", "0x1p-2", "1_0" or "+1") into a float64.
func (p *fastReader) number() (float64, bool) {
	p.space()
	b, i := p.b, p.i
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return 0, false
		}
	}
	v, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return 0, false // out of range: encoding/json refuses it
	}
	p.i = i
	return v, true
}

// floatPtr reads a number or null into a *float64 field.
func (p *fastReader) floatPtr() (*float64, bool) {
	if p.literal("null") {
		return nil, true
	}
	v, ok := p.number()
	return &v, ok
}

// maxSkipDepth bounds the nesting of a value skip passes over: encoding/json
// refuses more than 10,000 levels counted from where it starts, which is the
// report's object for decodeJSON, not the value; anything near that is left
// to decodeJSON.
const maxSkipDepth = 512

// skip passes over one value, strings and nesting followed; it does not
// check the value (the caller hands it to encoding/json, which does).
func (p *fastReader) skip() ([]byte, bool) {
	p.space()
	start, depth := p.i, 0
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case '"':
			for p.i++; p.i < len(p.b) && p.b[p.i] != '"'; p.i++ {
				if p.b[p.i] == '\\' {
					p.i++
				}
			}
			if p.i >= len(p.b) {
				return nil, false
			}
			p.i++ // the closing quote
			if depth == 0 {
				return p.b[start:p.i], true
			}
			continue
		case '[', '{':
			if depth++; depth > maxSkipDepth {
				return nil, false
			}
		case ']', '}':
			if depth == 0 { // a number or literal, ended by its container's end
				return p.b[start:p.i], p.i > start
			}
			if depth--; depth == 0 {
				p.i++
				return p.b[start:p.i], true
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return p.b[start:p.i], p.i > start
			}
		}
		p.i++
	}
	return p.b[start:p.i], depth == 0 && p.i > start
}

// asciiFoldsTo reports whether key is ASCII and equals one of names up to
// case but not exactly (encoding/json would take it for that field).
func asciiFoldsTo(key string, names []string) (folds, ascii bool) {
	for i := 0; i < len(key); i++ {
		if key[i] >= 0x80 {
			return false, false
		}
	}
	for _, n := range names {
		if len(n) != len(key) || n == key {
			continue
		}
		same := true
		for i := 0; i < len(n) && same; i++ {
			a, b := key[i], n[i]
			if 'A' <= a && a <= 'Z' {
				a += 'a' - 'A'
			}
			same = a == b
		}
		if same {
			return true, true
		}
	}
	return false, true
}

// matrix reads one element of "matrices", an object.
func (p *fastReader) matrix(m *Matrix) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	var seen uint16
	for {
		key, ok := p.plainString()
		if !ok || !p.eat(':') {
			return false
		}
		k := -1
		for i, n := range matrixKeys {
			if n == key {
				k = i
				break
			}
		}
		if k < 0 {
			// Unknown: ignored, as encoding/json does, when it cannot be a
			// field's name in another case.
			if folds, ascii := asciiFoldsTo(key, matrixKeys); folds || !ascii {
				return false
			}
			v, ok := p.skip()
			if !ok || !json.Valid(v) {
				return false
			}
		} else {
			if seen&(1<<k) != 0 {
				return false // encoding/json keeps the last; Parse says so there
			}
			seen |= 1 << k
			if !p.field(m, key) {
				return false
			}
		}
		if p.eat('}') {
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}

func (p *fastReader) field(m *Matrix, key string) bool {
	var ok bool
	switch key {
	case "module":
		if p.literal("null") {
			return true // leaves it "", as encoding/json does
		}
		m.Module, ok = p.plainString()
		return ok
	case "shape":
		v, ok := p.skip()
		return ok && json.Unmarshal(v, &m.Shape) == nil
	case "singular_values":
		if p.literal("null") {
			return true
		}
		if !p.eat('[') {
			return false
		}
		m.SingularValues = []float64{}
		return p.list(func() bool {
			if len(m.SingularValues) == MaxSingularValues {
				return false // Parse says so
			}
			v, ok := p.number()
			if ok {
				m.SingularValues = append(m.SingularValues, v)
			}
			return ok
		})
	case "delta_fro":
		m.DeltaFro, ok = p.floatPtr()
	case "residual_fro":
		m.ResidualFro, ok = p.floatPtr()
	case "noise_fro":
		m.NoiseFro, ok = p.floatPtr()
	case "residual_to_noise":
		m.ResidualToNoise, ok = p.floatPtr()
	case "rebuilt_rel_error":
		m.RebuiltRelError, ok = p.floatPtr()
	}
	return ok
}

// decodeFast reads data as ParseYield's encoding/json reading would, or
// says it cannot (ok false).
func decodeFast(data []byte, yield func()) (r *Report, ok bool) {
	p := &fastReader{b: data}
	r = &Report{}
	if !p.eat('{') {
		return nil, false
	}
	fields := map[string]any{"format": &r.Format, "base": &r.Base, "tuned": &r.Tuned, "rank": &r.Rank, "dtype": &r.DType,
		"tensors_compared": &r.TensorsCompared, "tensors_differing": &r.TensorsDiffering}
	seen := map[string]bool{}
	if !p.eat('}') {
		for {
			key, ok := p.plainString()
			if !ok || seen[key] || !p.eat(':') {
				return nil, false
			}
			seen[key] = true
			if key == "matrices" {
				if !p.matrices(r, yield) {
					return nil, false
				}
			} else {
				v, ok := p.skip()
				if !ok {
					return nil, false
				}
				dst, known := fields[key]
				if !known {
					dst = new(json.RawMessage)
				}
				if json.Unmarshal(v, dst) != nil {
					return nil, false
				}
			}
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return nil, false
			}
		}
	}
	if p.space(); p.i < len(p.b) {
		return nil, false // bytes after the report: decodeJSON decides
	}
	return r, true
}

func (p *fastReader) matrices(r *Report, yield func()) bool {
	if p.literal("null") {
		return true
	}
	if !p.eat('[') {
		return false
	}
	r.Matrices = []Matrix{}
	return p.list(func() bool {
		if len(r.Matrices) == MaxMatrices {
			return false // Parse says so
		}
		var m Matrix
		if p.literal("null") {
			// encoding/json leaves a zero Matrix (Parse then says it has
			// no module name)
		} else if !p.matrix(&m) {
			return false
		}
		r.Matrices = append(r.Matrices, m)
		if yield != nil {
			yield()
		}
		return true
	})
}

// list reads the elements of an array whose '[' was read, elem reading
// each, up to its ']'.
func (p *fastReader) list(elem func() bool) bool {
	if p.eat(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if p.eat(']') {
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}
