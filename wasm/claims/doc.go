// Package claims holds claims profiles: what a model card says about an
// adapter (rank, alpha, dtype, layers, the module table with shapes, counts,
// fidelity bounds, references), as JSON. Profiles for kvit-s/clef-lora-r256
// and for the built-in demo world are embedded; a user can load another.
//
// Counts (pairs, parameters, bytes, large matrices) are derived from the
// module table; the "card" section holds the figures the card states, and
// Check reports where the two disagree.
package claims
