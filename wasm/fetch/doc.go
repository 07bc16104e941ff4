// Package fetch is the engine's one door to HTTP: a request with headers
// and a body, a response whose body is read whole but never past a limit.
// The native implementation is net/http (native.go); in the browser,
// wasm/browser installs one built on the page's fetch(), so app.wasm does
// not link Go's HTTP client stack (crypto/tls, x509, http2: ~4 MB).
package fetch
