// Package runner runs the jobs of package jobs with the engine: in the
// browser's engine worker (wasm/browser/worker, whose Host reads the
// page's Files and URLs and checks an audit's pairs in a pool of workers),
// natively for the CLI (Native: local folders and files, URLs read by
// range, outputs confined to one folder), and for tests.
package runner
