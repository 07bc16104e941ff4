package main

import (
	"context"
	"fmt"
	"io"

	"github.com/kvit-s/clefcheck/wasm/claims"
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
	switch len(pos) {
	case 0:
		for _, n := range claims.Names() {
			p, err := claims.Builtin(n)
			if err != nil {
				return err
			}
			d := p.Derived()
			fmt.Fprintf(c.stdout, "%-16s %s — %d pairs, %d parameters, r = %d\n", n, p.Adapter, d.Pairs, d.Parameters, p.Rank)
		}
		return nil
	case 1:
		data, err := claims.JSON(pos[0])
		if err != nil {
			return &UsageError{Msg: fmt.Sprintf("no built-in profile %q (try 'clefcheck claims')", pos[0])}
		}
		_, err = c.stdout.Write(data)
		return err
	}
	return &UsageError{Msg: "at most one profile name"}
}

// loadClaims resolves --claims: a built-in name or a file.
func loadClaims(v string) (*claims.Profile, error) {
	if v == "" {
		return nil, nil
	}
	if p, err := claims.Builtin(v); err == nil {
		return p, nil
	}
	data, err := readFileLimited(v, 16<<20)
	if err != nil {
		return nil, &UsageError{Msg: fmt.Sprintf("--claims %s: neither a built-in profile (%v) nor a readable file (%v)", v, claims.Names(), err)}
	}
	p, err := claims.Parse(data)
	if err != nil {
		return nil, &UsageError{Msg: fmt.Sprintf("--claims %s: %v", v, err)}
	}
	return p, nil
}
