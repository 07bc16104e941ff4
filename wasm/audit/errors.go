package audit

import (
	"errors"
	"io/fs"

	"github.com/kvit-s/clefcheck/wasm/audit/findings"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// FindingsOf turns an error of the readers (safetensors' sentinels, coded
// errors of the other packages) into failing findings with stable codes;
// see package audit/findings, which package rebuild calls too.
func FindingsOf(err error, subject string) []report.Finding { return findings.Of(err, subject) }

// couldNot tells whether a read error says nothing about the adapter: the
// host unreachable or refusing, the check cancelled or timed out
// (report.CouldNot). A missing file is not one: the adapter lacks it.
func couldNot(err error) bool { return report.CouldNot(err) && !errors.Is(err, fs.ErrNotExist) }
