package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/kvit-s/clefcheck/wasm/service"
	"github.com/kvit-s/clefcheck/wasm/world"
)

// WorldCommand generates the demo world, or the full-size twin of the real adapter.
type WorldCommand struct{ stdout, stderr io.Writer }

func (c *WorldCommand) Usage() string {
	return `Usage: clefcheck world [flags] OUTDIR

Writes the built-in demo world into OUTDIR: a tiny Clef-like base model and
its tuned twin (sharded checkpoints under base/ and tuned/), and the rank-16
adapter extracted from their difference with its extraction report
(adapter/), a scoring head (head.safetensors), 36 test records (records/) and
the references computed from the tuned model at full precision (reference/
answers and hidden states). Deterministic in the seed.

With --full, writes instead the 1.40 GB twin of kvit-s/clef-lora-r256 into
OUTDIR/adapter: the same 186 tensor pairs, names and shapes, with random
factors in SVD form and a matching extraction report — for benchmarks.
`
}

func (c *WorldCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("world", c.Usage)
	full := fs.Bool("full", false, "write the full-size twin of the real adapter instead")
	seed := fs.Uint64("seed", 1, "random seed")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &UsageError{Msg: "give one OUTDIR"}
	}
	if err := os.MkdirAll(pos[0], 0o755); err != nil {
		return err
	}
	if *full {
		n, err := world.Full(pos[0], *seed)
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "wrote the full-size twin (%s of factors) to %s/adapter\n", size(n), pos[0])
		return nil
	}
	if err := service.BuildDemo(pos[0], *seed); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "wrote the demo world to %s (base/, tuned/, adapter/, records/, reference/)\n", pos[0])
	return nil
}
