package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// drainGrace bounds how long a server finishes the requests under way once
// it is told to stop (SIGINT or SIGTERM), refusing new ones; past it the
// remaining connections are closed.
const drainGrace = 10 * time.Second

// serveUntil serves h on ln until ctx ends (main ends it on SIGINT and
// SIGTERM), then shuts down gracefully: the listener closes at once, the
// requests under way finish (for up to drainGrace), idle connections close.
func serveUntil(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drainGrace)
	defer cancel()
	err := hs.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		hs.Close()
		return fmt.Errorf("requests still under way after %v were cut off", drainGrace)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(os.Stderr, "clefcheck: stopped; the requests under way were finished")
	return nil
}
