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

// ScanKernel is a faster bf16 scan for the bulk of a tensor.
//
// Deprecated: use dtype.ScanKernel.
type ScanKernel = dtype.ScanKernel

// SetScanKernel installs k for bf16 scans under name (nil: the portable
// loop).
//
// Deprecated: use dtype.ScanKernels.Install(name, k) and
// dtype.ScanKernels.Reset().
func SetScanKernel(name string, k ScanKernel) {
	if k == nil {
		dtype.ScanKernels.Reset()
		return
	}
	dtype.ScanKernels.Install(name, k)
}

// ScanBF16 is the portable bf16 scan.
//
// Deprecated: use dtype.ScanBF16.
func ScanBF16(b []byte) (nonfinite int, sumsq float64) { return dtype.ScanBF16(b) }
