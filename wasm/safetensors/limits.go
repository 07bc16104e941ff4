package safetensors

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// Limits on what one file or checkpoint may make the reader hold. A hostile
// header can name millions of zero-size tensors, an index a million shards;
// every such number is checked against these before anything is allocated
// for it, and exceeding one is an error wrapping ErrLimit that names it.
const (
	// MaxTensors bounds the tensors of one file, and of all the shards of
	// a checkpoint together, and the entries of an index's weight_map. A
	// 27B model has ~1,200 tensors, its LoRA adapter ~400; the largest
	// mixture-of-experts checkpoints stay under it. Reading one tensor's
	// header entry costs under 1 KB, so the inventory stays near 100 MB
	// at worst.
	MaxTensors = 100_000
	// MaxShards bounds the distinct shard files an index names (the
	// largest public checkpoints have a few hundred; each one is a file
	// held open).
	MaxShards = 1024
	// MaxNameLen bounds a tensor name (PEFT's keys are under 200 bytes).
	MaxNameLen = 4096
	// MaxShardNameLen bounds a shard's file name (most file systems allow
	// 255 bytes).
	MaxShardNameLen = 255
	// MaxHeaderString bounds any string of a header or an index (a
	// __metadata__ value): the JSON decoder holds a string whole.
	MaxHeaderString = 1 << 20
	// maxErrors bounds the violations listed for one file or checkpoint;
	// the rest are counted in a last one.
	maxErrors = 100
)

// ErrLimit: a file or checkpoint goes beyond one of the limits above.
var ErrLimit = errors.New("safetensors: limit exceeded")

// limitf is an error wrapping ErrLimit.
func limitf(subject, format string, a ...any) *Error { return errorf(ErrLimit, subject, format, a...) }

// capErrors keeps the first maxErrors of errs, counting the rest in a last
// one about subject.
func capErrors(errs Errors, subject string) Errors {
	if len(errs) <= maxErrors {
		return errs
	}
	more := len(errs) - maxErrors
	errs = errs[:maxErrors:maxErrors]
	return append(errs, errorf(errs[len(errs)-1].Err, subject, "%d more problems of this kind are not listed", more))
}

// jsonStream feeds a header or an index to encoding/json in bounded
// memory: it checks that the bytes are UTF-8 and start with '{', folds
// every run of whitespace outside strings into one space (a header of 100
// MB of padding would otherwise make the decoder buffer all of it), and
// refuses a string longer than MaxHeaderString.
type jsonStream struct {
	r        io.Reader
	buf      []byte
	carry    []byte // an incomplete UTF-8 sequence at the end of the last chunk
	started  bool   // the first byte was seen (or need not be '{')
	inStr    bool
	esc      bool
	space    bool // the last byte given out was whitespace outside a string
	strLen   int
	consumed int64 // raw bytes read so far
	err      error // the reason the stream stopped (not io.EOF)
}

// newJSONStream streams r; a header (brace) must start with '{' at its
// first byte, as the reference implementation requires.
func newJSONStream(r io.Reader, brace bool) *jsonStream {
	return &jsonStream{r: r, buf: make([]byte, 16<<10), started: !brace}
}

// errNotUTF8 and the others are what jsonStream stops with; parseHeader
// reports them instead of the decoder's view of the cut.
var errNotUTF8 = errors.New("header is not valid UTF-8")

func (s *jsonStream) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n := 0
	for n == 0 {
		m := min(len(p), len(s.buf))
		got, rerr := s.r.Read(s.buf[:m])
		s.consumed += int64(got)
		chunk := s.buf[:got]
		if len(s.carry) > 0 {
			chunk = append(s.carry, chunk...)
			s.carry = nil
		}
		// Keep an incomplete rune at the end for the next chunk.
		cut := len(chunk)
		for i := len(chunk) - 1; i >= 0 && i >= len(chunk)-utf8.UTFMax; i-- {
			if utf8.RuneStart(chunk[i]) {
				if !utf8.FullRune(chunk[i:]) {
					cut = i
				}
				break
			}
		}
		if !utf8.Valid(chunk[:cut]) {
			s.err = errNotUTF8
			return 0, s.err
		}
		s.carry = append(s.carry, chunk[cut:]...)
		for _, c := range chunk[:cut] {
			if !s.started {
				if c != '{' {
					s.err = fmt.Errorf("header does not start with '{' (found %q)", c)
					return 0, s.err
				}
				s.started = true
			}
			if s.inStr {
				s.strLen++
				if s.strLen > MaxHeaderString {
					s.err = limitf("", "a string in the header is longer than %d bytes (MaxHeaderString)", MaxHeaderString)
					return 0, s.err
				}
				switch {
				case s.esc:
					s.esc = false
				case c == '\\':
					s.esc = true
				case c == '"':
					s.inStr = false
				}
			} else {
				switch c {
				case ' ', '\t', '\n', '\r':
					if s.space {
						continue
					}
					s.space = true
					c = ' '
				case '"':
					s.inStr, s.strLen, s.space = true, 0, false
				default:
					s.space = false
				}
			}
			p[n] = c
			n++
		}
		if rerr != nil {
			if rerr == io.EOF && len(s.carry) > 0 {
				s.err = errNotUTF8
				return n, s.err
			}
			if rerr != io.EOF {
				s.err = rerr
			}
			return n, rerr
		}
	}
	return n, nil
}
