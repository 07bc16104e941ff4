// Package model runs the demo world's tiny Clef-like model: a deterministic
// pure-Go forward pass over the weights of a world checkpoint, with the LoRA
// adapter applied at run time (W·x + s·B·(A·x), as vLLM serves it) or
// merged, hidden states captured at the adapted layers, and a scoring head
// that turns the captured last-token states into one logit per option.
//
// Per layer: RMSNorm → token mixing → residual → RMSNorm → SiLU MLP
// (down(silu(gate·h) ⊙ up·h)) → residual. Token mixing is causal softmax
// attention in full-attention layers (q_proj's second half gates the output,
// grouped-query heads, per-head RMSNorm of q and k) and, in the others, a
// gated delta-rule linear recurrence: per value head a state S (dk × dv)
// decays by g = exp(−exp(A_log)·softplus(a + dt_bias)) and is corrected
// towards v along k with strength β = sigmoid(b), where a and b come from
// in_proj_a and in_proj_b; the read-out Sᵀq is normalised and gated by
// silu(z) from in_proj_z before out_proj. There is no positional encoding
// beyond causality: the stand-in needs none.
//
// Tokens are bytes: id = byte + 4, with PAD 0, BOS 1, EOS 2, SEP 3.
package model
