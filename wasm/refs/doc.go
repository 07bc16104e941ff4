// Package refs reads and writes reference answers and hidden states
// (FORMATS §4): reference/answers/<dataset>.jsonl, one answer a line, and
// reference/hidden/<id>.safetensors, one file per record ('/' in the id
// becomes "__") with input_ids and hidden_states and metadata
// format=clef-hidden/1, id, layers.
package refs
