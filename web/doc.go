// Package web is clefcheck's browser frontend (go-app, compiled to
// app.wasm): components render state; action handlers post a jobs.Spec to
// the engine worker (engine.wasm) through wasm/browser.Engine and publish
// its events and result with the state. The pages compute nothing
// themselves. Nothing is uploaded: local files are read in place, remote
// ones with HTTP Range requests. The server side (Handler, Routes for
// clefcheck serve and site) builds natively only.
package web
