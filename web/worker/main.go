//go:build js && wasm

// Command worker is engine.wasm (started by public/worker.js): the engine
// without the user interface. The page's engine worker runs its jobs
// (wasm/jobs) and an audit's pool of workers checks the pairs
// (wasm/browser/worker.Serve).
package main

import "github.com/kvit-s/clefcheck/wasm/browser/worker"

func main() { worker.Serve() }
