//go:build !(js && wasm)

package web

import (
	"context"
	"errors"
	"io/fs"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/source"
)

var errNoFiles = errors.New("local files can be read only in the browser")

func pickedNames(string) ([]string, error) { return nil, errNoFiles }

// runJob runs spec in this process: outside the browser there is no engine
// worker (the component tests), and only URLs can be opened.
func runJob(ctx context.Context, spec *jobs.Spec, onEvent func(jobs.Event)) (*jobs.Output, error) {
	return runner.Run(ctx, spec, runner.Host{Open: func(in *jobs.Input) (fs.FS, error) {
		if in.URL == "" {
			return nil, errNoFiles
		}
		h, err := source.NewHTTP(in.URL)
		if err == nil {
			h.Token = in.Token
		}
		return h, err
	}}, onEvent)
}

// hostAnswers: outside the browser no request is refused for CORS.
func hostAnswers(string) bool { return false }
