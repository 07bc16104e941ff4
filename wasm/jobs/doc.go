// Package jobs is the engine's one door, its types only: every piece of
// work — an audit, a block of s·B·A, a rebuild check, a hidden-state or
// answers comparison, a batch of decisions, one decision, the claims
// profiles — is a Spec in JSON, reporting Events as it goes and ending
// with an Output in JSON whose results are package report's types.
// Package runner runs them.
//
// Three hosts use the same door. In the browser the pages (app.wasm) hold
// no engine code: they import this package, post a Spec to the engine
// worker (engine.wasm, wasm/browser/worker) and render the events and the
// output it posts back. The CLI turns its flags into a Spec and runs it
// with runner.Native; its --json output is the job's result, the same
// JSON a page downloads. Tests and other Go hosts call runner.Run.
//
// The package depends only on report, progress and the standard library,
// so that the pages stay small (make guard checks it).
package jobs
