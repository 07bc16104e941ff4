// Package refs reads and writes reference answers and hidden states
// (FORMATS §4): reference/answers/<dataset>.jsonl, one answer a line, and
// reference/hidden/<id>.safetensors, one file per record ('/' in the id
// becomes "__") with input_ids and hidden_states and metadata
// format=clef-hidden/1, id, layers.
//
// The readers are bounded (limits.go): a JSONL line by MaxLine, the lines
// and bytes of one run (all files of one side together, a Budget) by
// MaxLines and MaxRunBytes, options by MaxOptions, a hidden-state file by
// MaxHiddenBytes decoded, MaxTokens and MaxLayers, checked before anything
// is allocated; exceeding one is a limit.exceeded error. A reference's
// probabilities must be a distribution (ReadReferenceAnswers,
// CheckDistribution within ProbSumTolerance); a candidate's are read as
// they are and judged by compare.Answers.
package refs
