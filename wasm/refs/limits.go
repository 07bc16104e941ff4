package refs

import (
	"errors"
	"fmt"
	"math"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// Limits on what one run's records, answers and hidden states may make the
// reader hold (a hostile answers file of 10⁶ lines once took 2 GB). A
// "run" is one side of a check: the records of a batch, the reference's
// or the candidate's answers. Exceeding one is a limit.exceeded error that
// names it.
const (
	// MaxLine bounds one JSONL line (a record with a long prompt is a few
	// KB; a 128k-token prompt stays under it).
	MaxLine = 4 << 20
	// MaxLines bounds the records or answers of one run (Clef has 72, the
	// demo world 36, the largest multiple-choice benchmarks ~15,000); at
	// ~1 KB each in memory they stay under 64 MB.
	MaxLines = 65536
	// MaxRunBytes bounds the JSONL bytes of one run, all files together.
	MaxRunBytes = 64 << 20
	// MaxOptions bounds the options of one record or answer (BANKING77
	// has 77).
	MaxOptions = 4096
	// MaxHiddenBytes bounds one hidden-state file's states, decoded as
	// float32 (the reference and the candidate are held together).
	MaxHiddenBytes = 128 << 20
	// MaxTokens bounds a hidden-state file's input_ids.
	MaxTokens = 1 << 20
	// MaxLayers bounds the captured layers of a hidden-state file.
	MaxLayers = 4096
	// hiddenChunk is how much of a hidden-state tensor is read at a time.
	hiddenChunk = 4 << 20
)

// ProbSumTolerance is how far from 1 the probabilities of an answer may
// sum: a float32 softmax over n options sums to 1 within n·2⁻²⁴ (5·10⁻⁶
// for 77 options), and writing each probability with 6 significant digits
// adds at most n·5·10⁻⁷ (4·10⁻⁵); 10⁻³ leaves a margin of 25 over both,
// while probabilities that are not a distribution (all 1.0 over k ≥ 2
// options sum to k) miss by k − 1 ≥ 1.
const ProbSumTolerance = 1e-3

// CheckDistribution reports whether probs is a probability distribution:
// every value in [0, 1] and their sum within ProbSumTolerance of 1.
func CheckDistribution(probs []float64) error {
	sum := 0.0
	for _, p := range probs {
		if math.IsNaN(p) || p < 0 || p > 1 {
			return fmt.Errorf("probability %v is not in [0, 1]", p)
		}
		sum += p
	}
	if math.Abs(sum-1) > ProbSumTolerance {
		return fmt.Errorf("the %d probabilities sum to %.6g, not 1 (within %g): not a distribution", len(probs), sum, ProbSumTolerance)
	}
	return nil
}

// CheckAnswer is Answer.Check with the options bounded by MaxOptions.
func CheckAnswer(a *Answer) error {
	if len(a.Options) > MaxOptions {
		return limitf("", "%d options, more than %d (refs.MaxOptions)", len(a.Options), MaxOptions)
	}
	return a.Check()
}

// Budget is what the JSONL files of one run may still hold.
type Budget struct {
	Lines int
	Bytes int64
}

// NewBudget is a run's full budget: MaxLines lines, MaxRunBytes bytes.
func NewBudget() *Budget { return &Budget{Lines: MaxLines, Bytes: MaxRunBytes} }

func (b *Budget) take(name string, n int64) error {
	if b.Bytes -= n; b.Bytes < 0 {
		return limitf(name, "the files of this run hold more than %d bytes (refs.MaxRunBytes)", MaxRunBytes)
	}
	return nil
}

func (b *Budget) line(name string) error {
	if b.Lines--; b.Lines < 0 {
		return limitf(name, "the files of this run hold more than %d lines (refs.MaxLines)", MaxLines)
	}
	return nil
}

// limitf is a limit.exceeded error about subject.
func limitf(subject, format string, a ...any) error {
	return &report.Error{Code: report.LimitExceeded, Subject: subject, Msg: fmt.Sprintf(format, a...), Err: ErrLimit}
}

// ErrLimit is what the limit errors of this package wrap.
var ErrLimit = errors.New("refs: limit exceeded")
