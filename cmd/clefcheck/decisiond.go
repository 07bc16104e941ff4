package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/kvit-s/clefcheck/wasm/service"
)

// DecisiondCommand serves the demo world's decision service.
type DecisiondCommand struct{ stdout, stderr io.Writer }

func (c *DecisiondCommand) Usage() string {
	return `Usage: clefcheck decisiond --world DIR [flags]

Serves POST /v1/systemone (FORMATS §5) and GET /health with the demo world's
model: the base checkpoint with the adapter applied at run time, as vLLM
serves a LoRA. Requests must be JSON (Content-Type: application/json, one
object, no duplicate keys). Stops gracefully on Ctrl-C or SIGTERM: requests
under way are finished (for up to 10 s), new ones refused.
`
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (c *DecisiondCommand) Run(ctx context.Context, args []string) error {
	fs := newFlags("decisiond", c.Usage)
	worldDir := fs.String("world", "", "the demo world `DIR` (make one with 'clefcheck world DIR')")
	addr := fs.String("addr", "127.0.0.1:8090", "listen address `HOST:PORT`")
	token := fs.String("token", "", "require \"Authorization: Bearer `TOKEN`\"")
	var origins multiFlag
	fs.Var(&origins, "allow-origin", "answer CORS for this `ORIGIN` (* for any but \"null\"); requests from other origins are refused")
	quant := fs.String("quant", "", "quantize the base weights to `nvfp4` (4-bit E2M1 with an FP8 E4M3 scale per 16 values; bf16 activations)")
	drop := fs.String("drop-modules", "", "ignore the adapter on these modules, a comma-separated `LIST` (e.g. in_proj_a,in_proj_b)")
	merge := fs.Bool("merge", false, "merge the adapter into the weights instead")
	inflight := fs.Int("max-in-flight", 4, "concurrent decisions (more wait, then 503)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *worldDir == "" || len(pos) > 0 {
		return &UsageError{Msg: "need --world DIR (make one with 'clefcheck world DIR') and no other arguments"}
	}
	if *quant != "" && *quant != "nvfp4" {
		return &UsageError{Msg: "--quant takes nvfp4"}
	}
	srv, desc, err := newDecisionServer(*worldDir, *quant, *drop, *merge)
	if err != nil {
		return err
	}
	srv.Token, srv.AllowOrigins, srv.MaxInFlight = *token, origins, *inflight
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "decision service (%s) on http://%s%s\n", desc, ln.Addr(), service.Path)
	return serveUntil(ctx, ln, srv.Handler())
}

// newDecisionServer loads the demo world's model as a server runs it.
func newDecisionServer(worldDir, quant, drop string, merge bool) (*service.Server, string, error) {
	o := service.DemoOptions{Quant: quant, Merge: merge}
	if drop != "" {
		o.Drop = strings.Split(drop, ",")
	}
	srv, err := service.NewDemo(worldDir, o)
	if err != nil {
		return nil, "", err
	}
	return srv, srv.Describe, nil
}
