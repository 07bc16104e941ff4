//go:build js && wasm

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"syscall/js"

	"github.com/kvit-s/clefcheck/wasm/audit"
	"github.com/kvit-s/clefcheck/wasm/browser"
	"github.com/kvit-s/clefcheck/wasm/browser/msg"
	"github.com/kvit-s/clefcheck/wasm/hub"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/runner"
	"github.com/kvit-s/clefcheck/wasm/source"
)

// jobRunner runs the page's jobs in the engine worker, each in its own
// goroutine: msg.Job starts one, msg.Cancel cancels it; it answers with
// msg.Event, then msg.Done or msg.Fail.
type jobRunner struct {
	mu      sync.Mutex
	cancels map[int]context.CancelFunc
	post    func(js.Value)
}

func (r *jobRunner) start(m msg.Job) {
	id := m.ID
	var spec jobs.Spec
	if err := json.Unmarshal([]byte(m.Spec), &spec); err != nil {
		r.post(msg.Fail{ID: id, Msg: "job spec: " + err.Error()}.Value())
		return
	}
	files := m.Files
	ctx, cancel := context.WithCancel(context.Background())
	r.mu.Lock()
	r.cancels[id] = cancel
	r.mu.Unlock()
	go func() {
		defer func() {
			r.mu.Lock()
			delete(r.cancels, id)
			r.mu.Unlock()
			cancel()
		}()
		y := &browser.Yielder{}
		host := runner.Host{
			Open:        func(in *jobs.Input) (fs.FS, error) { return openInput(in, files) },
			AuditRemote: poolFor,
			Yield:       y.Yield,
		}
		out, err := runner.Run(ctx, &spec, host, func(e jobs.Event) {
			b, err := json.Marshal(e)
			if err == nil {
				r.post(msg.Event{ID: id, JSON: string(b)}.Value())
			}
		})
		if err == nil {
			var b []byte
			if b, err = json.Marshal(out); err == nil {
				r.post(msg.Done{ID: id, JSON: string(b)}.Value())
				return
			}
		}
		r.post(msg.Fail{ID: id, Msg: err.Error()}.Value())
	}()
}

func (r *jobRunner) cancel(id int) {
	r.mu.Lock()
	c := r.cancels[id]
	r.mu.Unlock()
	if c != nil {
		c()
	}
}

// openInput gives a job's input as files: a URL read by range, or the
// files the page attached under in.Files.
func openInput(in *jobs.Input, files js.Value) (fs.FS, error) {
	switch {
	case in.URL != "":
		return runner.OpenURL(in) // a Hub source pinned to its commit, or any http(s) folder
	case in.Files != "":
		if !files.Truthy() {
			return nil, errors.New("no files were attached")
		}
		list := files.Get(in.Files)
		if !list.Truthy() || list.Get("length").Int() == 0 {
			return nil, fmt.Errorf("no files chosen (%s)", in.Files)
		}
		if list.Get("item").Type() != js.TypeFunction { // an array of File
			// A dropped folder's files come with their paths in it (names).
			names := list.Get("names")
			f := browser.NewFiles()
			for i := 0; i < list.Length(); i++ {
				name := list.Index(i).Get("name").String()
				if names.Truthy() && names.Index(i).Truthy() {
					name = names.Index(i).String()
				}
				f.Add(list.Index(i), name)
			}
			return f, nil
		}
		return browser.FromFileList(list), nil
	}
	return nil, errors.New("neither a URL nor files")
}

// poolFor checks an audit's pairs in a pool of nested workers when this
// worker can start them.
func poolFor(fsys fs.FS, in *jobs.Input, opt audit.Options, onStart func(int, string)) func(context.Context, []audit.Job, func(int64)) ([]audit.Figures, error) {
	if !browser.CanUseWorkers() {
		return nil
	}
	spec, err := SpecOf(opt)
	if err != nil {
		return nil
	}
	self := js.Global().Get("location").Get("href").String()
	pool := &AuditPool{N: Workers(), Dir: ".", Spec: spec, OnStart: onStart, WorkerURL: self}
	if opt.Mode == report.ModeQuick {
		// The quick scan computes at memory speed: keep more downloads in
		// flight instead.
		pool.Depth = quickDepth
	}
	switch f := fsys.(type) {
	case *source.HTTP:
		pool.URL, pool.Token = f.Base.String(), f.Token
	case *hub.FS: // the workers read the resolved commit's resolve URLs
		pool.URL, pool.Token = f.Base.String(), f.Token
	case *browser.Files:
		pool.Files = f
	default:
		return nil
	}
	return pool.Remote
}
