//go:build js && wasm

// Command worker is engine.wasm, the audit's Web Worker (started by
// public/worker.js): the engine without the user interface, checking the
// pairs the page hands it (wasm/browser.ServeAuditWorker).
package main

import "github.com/kvit-s/clefcheck/wasm/browser"

func main() { browser.ServeAuditWorker() }
