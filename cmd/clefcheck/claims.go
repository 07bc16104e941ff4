package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

// ClaimsCommand lists the built-in claims profiles or prints one.
type ClaimsCommand struct{ stdout io.Writer }

func (c *ClaimsCommand) Usage() string {
	return `Usage: clefcheck claims [NAME]

Without NAME, lists the built-in claims profiles; with it, prints that
profile's JSON (a starting point for a profile of another adapter).
`
}

func (c *ClaimsCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("claims", c.Usage)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return &UsageError{Msg: "at most one profile name"}
	}
	spec := &jobs.Spec{Kind: jobs.KindClaims}
	if len(pos) == 1 {
		spec.Claims = pos[0]
	}
	out, err := runner.Run(ctx, spec, runner.Host{Open: noInputs}, nil)
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	if len(pos) == 1 {
		_, err = c.stdout.Write(out.ClaimsJSON)
		return err
	}
	for _, p := range out.Profiles {
		fmt.Fprintf(c.stdout, "%-16s %s — %s, %s, r = %d\n", p.Name, p.Adapter, count(p.Pairs, "pair"), count(int(p.Parameters), "parameter"), p.Rank)
	}
	return nil
}
