package audit

import (
	"github.com/kvit-s/clefcheck/wasm/dtype"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/spectral"
)

// kernelSummary is Summary.Kernel: the kernels the mode computes with, by
// their active names (package kernels).
func kernelSummary(mode report.Mode) string {
	switch mode {
	case report.ModeQuick:
		return "scan " + dtype.ScanKernels.Name()
	case report.ModeRandomized:
		return "probes " + spectral.ProbeKernels.Name() + ", grams " + spectral.GramKernels.Name()
	}
	return spectral.GramKernels.Name()
}
