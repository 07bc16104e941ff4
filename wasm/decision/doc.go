// Package decision is the decision API of FORMATS §5 — POST /v1/systemone —
// from the client's side: the request and response types and their
// validation, a Client that survives bad servers (timeouts, retries with
// backoff, bounded bodies, errors with their cause), and Run, which sends a
// batch of records with bounded concurrency. The server side, answering
// with the demo world's model, is package service.
package decision
