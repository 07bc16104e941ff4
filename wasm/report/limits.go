package report

// Codes added for issue 10 (hostile input is bounded). They live in a file
// of their own so that the bounds work and the verdict work do not edit the
// same lines.
const (
	// LimitExceeded: an input goes beyond one of the engine's stated
	// limits (tensors per checkpoint, shards, report matrices, records or
	// answers per run, line length, the rank the exact Gram route takes,
	// …). The message names the limit and its value; what lies beyond it
	// was not checked, so it never passes.
	LimitExceeded Code = "limit.exceeded"
)
