//go:build !(js && wasm)

package web

import (
	"context"
	"errors"
	"io/fs"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/runner"
)

var errNoFiles = errors.New("local files can be read only in the browser")

func pickedNames(string) ([]string, error) { return nil, errNoFiles }

// runJob runs spec in this process: outside the browser there is no engine
// worker (the component tests), and only URLs can be opened.
func runJob(ctx context.Context, spec *jobs.Spec, onEvent func(jobs.Event)) (*jobs.Output, error) {
	out, err := runner.Run(ctx, spec, runner.Host{Open: func(in *jobs.Input) (fs.FS, error) {
		if in.URL == "" {
			return nil, errNoFiles
		}
		return runner.OpenURL(in)
	}}, onEvent)
	keepTables(out)
	return out, err
}

// dropped: outside the browser nothing is dropped.
func dropped(_ app.Context, _ app.Event, _ string, then func([]string, error)) { then(nil, errNoFiles) }

// hostAnswers: outside the browser no request is refused for CORS.
func hostAnswers(string) bool { return false }

// siteHasService: outside the browser the demo service is assumed.
func siteHasService() bool { return true }

// resetEngine: outside the browser there is no engine worker to reset.
func resetEngine(string) {}

// InstallDiagnostics: outside the browser there is no page to install in.
func InstallDiagnostics() {}
