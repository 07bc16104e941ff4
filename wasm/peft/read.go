package peft

import (
	"errors"
	"io/fs"

	"github.com/kvit-s/clefcheck/wasm/source"
)

// MaxConfigSize is the largest adapter_config.json ReadConfig reads. PEFT
// writes a few kilobytes; a long rank_pattern of a large model stays far
// below this.
const MaxConfigSize = 16 << 20

// Sentinel errors of ReadConfig and ParseConfig.
var (
	// ErrUnreadable: the configuration cannot be read (missing, larger
	// than MaxConfigSize, an I/O error).
	ErrUnreadable = errors.New("peft: adapter_config.json cannot be read")
	// ErrInvalid: the configuration is malformed or not a plain LoRA one.
	ErrInvalid = errors.New("peft: invalid adapter_config.json")
)

// ReadConfig reads the configuration file name of fsys (its
// adapter_config.json) and parses it. An error reading it wraps
// ErrUnreadable and the cause, and reads as the cause (which names the
// file); an error parsing it is ParseConfig's (ErrInvalid).
func ReadConfig(fsys fs.FS, name string) (*Config, error) {
	data, err := source.ReadSmall(fsys, name, MaxConfigSize)
	if err != nil {
		return nil, &readError{err}
	}
	return ParseConfig(data)
}

// readError wraps both ErrUnreadable and the cause, and says what the cause
// says.
type readError struct{ cause error }

func (e *readError) Error() string   { return e.cause.Error() }
func (e *readError) Unwrap() []error { return []error{ErrUnreadable, e.cause} }
