// Package service serves the decision API (FORMATS §5) with the demo
// world's model: POST /v1/systemone and GET /health, with bounded request
// size and concurrency, bearer tokens and CORS; NewDemo loads the world as
// a server runs it (optionally quantized, or with some modules' LoRA
// dropped), BuildDemo writes the world. It is server code, kept out of
// both wasm binaries.
package service
