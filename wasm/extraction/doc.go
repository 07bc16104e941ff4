// Package extraction reads and writes extraction-report.json (format
// "clef-extraction-report/1", FORMATS §4): per-matrix figures from the SVD
// extraction of an adapter. Missing fields mean "not reported", never an error.
package extraction
