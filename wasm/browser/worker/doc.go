// Package worker is engine.wasm's side of the browser (its main, web/worker,
// calls Serve): the Web Workers that run clefcheck's engine, and the
// hand-assembled WebAssembly SIMD kernels they compute with.
//
// The page's Go (app.wasm) holds no engine code. It starts one engine
// worker (public/worker.js running engine.wasm) and posts it every job
// (browser.Engine); the worker runs the job with wasm/runner and posts its
// events and output back (jobs.go). An audit there starts a pool of
// workers, nested and running the same engine.wasm (dealer.go): each opens
// the same adapter (a File can be posted to a worker; a URL is read by range
// from each) and checks the pairs it is dealt (poolworker.go). Go's wasm has
// no threads: this is how the browser audit uses more than one core, and
// the page never stalls. The engine worker keeps one audit's pool workers
// started and idle before the audit (warm.go), so that an audit does not
// wait for them nor share its cores with their start. Serve (serve.go)
// answers both kinds of message in every worker; the messages are package
// msg's (wasm/browser/msg), whose documentation lists them all.
//
// The dealer deals neighbouring pairs together in segments of about 32 MB,
// biggest first, each worker holding up to two at a time (four in a quick
// audit), and reads each segment's bytes itself (a Range request for a
// URL, a slice of a local File), transferring them with the segment: the
// next one arrives while the worker computes. A URL's spans are read
// through the engine worker's source.HTTP (its retries, redirects and
// token rule) with clefcheckFetchRange making each request. A pool worker
// whose segment came without bytes reads them itself. Each pool worker
// reports its retried reads with its figures and its error's class
// (classes.go); the engine worker adds the job's total to the audit's
// kernel line.
//
// With the audit's digests on (runner.Host.DigestWindow) or a cache
// (cache.go: the byte ranges read from URLs, kept in the Origin Private
// File System), the dealer deals the segments in file order, each span's
// read starting where the previous one ended, and reads them into Go
// through the engine worker's source (source.RangeFS.ReadRange): the
// digest hashes them as they pass, the cache keeps and serves them; the
// digest's pass at the end then reads again almost nothing. The hashing
// itself runs in the digest worker (digest.go, public/digest.js), a thread
// of its own, once its SHA-256 has agreed with crypto/sha256: the engine
// worker's thread only copies the bytes to it, and stays free to drain its
// fetches. The pool's workers are started with #pool and start none.
//
// At start every worker compiles the SIMD kernels (package wasmsimd)
// against its own Go memory, checks them against the portable Go loops and
// installs them (InstallSIMD, simd.go); Ready says why not when it could
// not.
package worker
