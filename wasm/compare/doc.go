// Package compare checks a server's output against the references: hidden
// states record by record and layer by layer, and answers (choices, logits,
// probabilities, accuracy on known answers).
//
// # Hidden-state tolerances
//
// The references are computed at full precision; a faithful server runs the
// same weights in bf16, whose 8 significant bits give each activation a
// relative rounding error up to 2⁻⁸ ≈ 3.9·10⁻³. Two defaults follow the
// field's practice: the relative L2 error ‖c − r‖/‖r‖ of a layer must stay
// within 1.6·10⁻² (torch.testing's rtol for bf16), and the cosine similarity
// of the layer's states must stay at or above 1 − 10⁻³ (the bar vLLM's tests
// use for hidden states). NMSE (‖c − r‖²/‖r‖²) and max |Δ| are reported, not
// judged. Token ids must match exactly before any number is compared.
package compare
