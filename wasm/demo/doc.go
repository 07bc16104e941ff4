// Package demo builds the demo world's behaviour on top of package world's
// checkpoints: the test records, and the references computed at full
// precision from the tuned weights (FORMATS §4) — answers and hidden states.
package demo
