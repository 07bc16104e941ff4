// Package browser is the engine's door to the browser (syscall/js), used
// by the pages (app.wasm) and by the engine workers (engine.wasm):
//
//   - Engine (engine.go) is the page's client of the engine worker: it
//     starts public/worker.js on first use, posts each job (wasm/jobs.Spec)
//     with the FileLists it reads, and turns the worker's answers back into
//     events and an output. The messages are package msg's
//     (wasm/browser/msg), which lists them all; the worker's side is
//     package worker (wasm/browser/worker).
//   - Install and Fetch (fetch.go) make the page's fetch() the engine's HTTP
//     transport (fetch.Default), through clefcheckFetch in
//     public/clefcheck.js.
//   - File and Files (file.go): browser File objects read by range with
//     File.slice(a, b).arrayBuffer(), copied into the caller's buffer;
//     Files is a set of them as an fs.FS, a source.RangeFS (the same
//     range-read file system, with the same preload spans, as the HTTP
//     source) over File.slice.
//   - Await waits for a promise (from a goroutine, never inside a
//     js.FuncOf callback); Yielder lets long work leave the page
//     responsive; CanUseWorkers says whether Web Workers exist.
//
// Its files build only for js/wasm; `make guard` checks that no other
// engine package imports syscall/js or go-app.
package browser
