// Package report is the contract every check speaks: the findings it
// yields, with stable codes (FORMATS §6, extended in wasm/FORMATS.md), the
// verdict they add up to — pass, warn or fail about the artifact, or error
// when the check could not be completed — and the result types of every
// job (audit, rebuild, block, hidden states, answers, decisions), each
// embedding an Outcome. It depends on nothing computational: the pages
// link it, the CLI prints it, the engine fills it.
package report
