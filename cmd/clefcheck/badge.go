package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/kvit-s/clefcheck/wasm/report"
)

// BadgeCommand writes a report's verdict as an SVG badge.
type BadgeCommand struct{ stdout io.Writer }

func (c *BadgeCommand) Usage() string {
	return `Usage: clefcheck badge [flags] REPORT.json

Writes the verdict of a report (the JSON that audit, rebuild, hidden,
answers or decide print when asked for it) as an SVG badge — PASS, WARN,
FAIL, or a grey ERROR when the check could not be completed — to FILE or
stdout, for a README or a model card.
`
}

func (c *BadgeCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("badge", c.Usage)
	label := fs.String("label", "clefcheck", "the badge's left side, `TEXT`")
	out := fs.String("out", "", "write the SVG to `FILE` instead of stdout")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Msg: "give one REPORT.json"}
	}
	f, err := os.Open(pos[0])
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	defer f.Close()
	var r struct {
		Verdict report.Verdict `json:"verdict"`
	}
	if err := json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&r); err != nil {
		return &UsageError{Msg: fmt.Sprintf("%s is not a clefcheck JSON report: %v", pos[0], err)}
	}
	switch r.Verdict {
	case report.VerdictPass, report.VerdictWarn, report.VerdictFail, report.VerdictError:
	default:
		return &UsageError{Msg: fmt.Sprintf("%s has no verdict (pass, warn, fail or error)", pos[0])}
	}
	svg := report.Badge(*label, r.Verdict)
	if *out == "" {
		_, err = io.WriteString(c.stdout, svg)
		return err
	}
	return os.WriteFile(*out, []byte(svg), 0o644)
}
