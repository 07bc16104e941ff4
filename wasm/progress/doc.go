// Package progress measures long jobs in bytes and reports them at a
// throttled rate, with a rate and an ETA.
package progress
