package audit

import (
	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// FindingsOf turns an error of the readers (safetensors' sentinels, coded
// errors of the other packages) into failing findings with stable codes;
// see package audit/findings, which package rebuild calls too.
func FindingsOf(err error, subject string) []report.Finding { return findings.Of(err, subject) }
