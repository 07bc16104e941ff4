package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"io/fs"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/model"
	"github.com/kvit-s/clefcheck/wasm/rebuild"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
	"github.com/kvit-s/clefcheck/wasm/safetensors"
	"github.com/kvit-s/clefcheck/wasm/source"
)

const refLimit = 64 << 20 // bytes of one reference answers file

// openAdapter opens an adapter's files and its tensors' headers.
func openAdapter(h Host, in *jobs.Input) (fs.FS, *safetensors.Checkpoint, error) {
	fsys, err := open(h, in, "adapter")
	if err != nil {
		return nil, nil, err
	}
	ck, err := safetensors.OpenCheckpoint(fsys, ".", "adapter_model")
	if err != nil {
		return nil, nil, err
	}
	return fsys, ck, nil
}

// runOpen lists the adapter's modules and checks that Base and Tuned, if
// given, open as checkpoints (headers only).
func runOpen(spec *jobs.Spec, h Host) (*jobs.Output, error) {
	out := &jobs.Output{}
	if spec.Adapter != nil {
		_, ck, err := openAdapter(h, spec.Adapter)
		if err != nil {
			return nil, err
		}
		out.Modules = rebuild.Modules(ck)
		ck.Close()
		if len(out.Modules) == 0 {
			return nil, errors.New("the adapter has no complete LoRA pair")
		}
	}
	if spec.Base != nil || spec.Tuned != nil {
		for _, in := range []struct {
			in   *jobs.Input
			name string
		}{{spec.Base, "base checkpoint"}, {spec.Tuned, "tuned checkpoint"}} {
			fsys, err := open(h, in.in, in.name)
			if err == nil {
				var ck *safetensors.Checkpoint
				if ck, err = safetensors.OpenCheckpoint(fsys, ".", "model"); err == nil {
					ck.Close()
				} else {
					err = fmt.Errorf("%s: %w", in.name, err)
				}
			}
			if err != nil {
				out.CkErr = err.Error()
				break
			}
		}
	}
	return out, nil
}

func runSample(spec *jobs.Spec, h Host) (*jobs.Output, error) {
	n := spec.Size
	if n < 1 || n > jobs.MaxBlock {
		return nil, fmt.Errorf("block size %d: choose 1 to %d", n, jobs.MaxBlock)
	}
	if spec.Row0 < 0 || spec.Col0 < 0 {
		return nil, errors.New("the block's first row and column cannot be negative")
	}
	fsys, ck, err := openAdapter(h, spec.Adapter)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	b, err := rebuild.Sample(fsys, ck, spec.Module, spec.Row0, n, spec.Col0, n)
	if err != nil {
		return nil, err
	}
	return &jobs.Output{Block: b, Markdown: BlockMarkdown(b)}, nil
}

func runRebuild(ctx context.Context, spec *jobs.Spec, h Host, em *emitter) (*jobs.Output, error) {
	begun := time.Now()
	prof, err := ClaimsOf(spec, h)
	if err != nil {
		return nil, err
	}
	if spec.Base == nil && spec.Tuned == nil && prof != nil {
		ep, tok := "", ""
		if spec.Adapter != nil && spec.Adapter.URL != "" {
			ep, tok = spec.Adapter.Endpoint, spec.Adapter.Token
		}
		ClaimsCheckpoints(spec, prof.Base.Repo, prof.Base.Revision, prof.Tuned.Repo, prof.Tuned.Revision, ep, tok)
	}
	var fss [3]fs.FS
	for i, in := range []struct {
		in   *jobs.Input
		name string
	}{{spec.Adapter, "adapter"}, {spec.Base, "base checkpoint"}, {spec.Tuned, "tuned checkpoint"}} {
		var err error
		if fss[i], err = open(h, in.in, in.name); err != nil {
			return nil, err
		}
	}
	opt, err := rebuildOptions(spec, fss[1], fss[2], em)
	if err != nil {
		return nil, err
	}
	opt.Adapter, opt.Claims, opt.Workers, opt.Progress = fss[0], prof, workers(spec), em.status
	res, err := rebuild.Run(ctx, opt)
	if err != nil {
		return nil, err
	}
	label := spec.Label
	if label == "" {
		label = spec.Base.String() + " and " + spec.Tuned.String()
	}
	res.Provenance, res.Bounds = rebuildProvenance(spec, fss, prof, res, begun), rebuildBounds(prof)
	return &jobs.Output{Rebuild: res, Markdown: RebuildMarkdown(label, res)}, nil
}

// runHidden compares two folders of hidden states (Ref, Cand), or
// captures the candidate live: Site's records are sent to Server with
// return_hidden and compared with Site's reference states.
func runHidden(ctx context.Context, spec *jobs.Spec, h Host, em *emitter) (*jobs.Output, error) {
	if spec.Server == "" {
		ref, err := open(h, spec.Ref, "reference folder")
		if err != nil {
			return nil, err
		}
		cand, err := open(h, spec.Cand, "capture folder")
		if err != nil {
			return nil, err
		}
		res, err := compare.Hidden(ref, ".", cand, ".", tolOf(spec))
		if err != nil {
			return nil, err
		}
		switch {
		case res.Summary.Records == 0:
			res.Add(report.Could(report.CheckEmpty, spec.Ref.String(), "the reference folder holds no hidden-state files (<id>.safetensors): nothing to compare"))
		case allMissing(res):
			res.Outcome = report.Outcome{} // no capture at all, not a capture that lacks records
			res.Add(report.Could(report.CheckEmpty, spec.Cand.String(), "the folder holds none of the reference's records (<id>.safetensors): nothing to compare"))
		}
		res.Source = spec.Cand.String()
		return &jobs.Output{Hidden: res, Note: res.Source, Markdown: HiddenMarkdown(res, res.Source)}, nil
	}
	recs, refFS, refDir, from, err := liveInputs(spec, h)
	if err != nil {
		return nil, err
	}
	// Each record is compared as its states arrive, then they are dropped.
	c := &decision.Client{BaseURL: spec.Server, Token: spec.Token, Timeout: 60 * time.Second}
	hc := compare.NewHiddenComparer(tolOf(spec))
	var failed []report.Finding
	done := 0
	var mu sync.Mutex
	decision.Run(ctx, c, recs, decision.RunOptions{Concurrency: 2, Hidden: true, OnOutcome: func(o *decision.Outcome) {
		hs, herr := o.HiddenStates()
		if o.Resp != nil {
			o.Resp.Hidden = nil
		}
		var r *refs.Hidden
		var rerr error
		if o.Err == nil && herr == nil && hs != nil {
			r, rerr = refs.ReadHidden(refFS, path.Join(refDir, refs.FileName(o.Record.ID)))
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		switch {
		case o.Err != nil:
			failed = append(failed, decisionFailed(o.Record.ID, o.Err))
		case herr != nil:
			failed = append(failed, report.Finding{Code: report.DecisionFailed, Severity: report.Fail, Subject: o.Record.ID, Message: "hidden states: " + clip(herr.Error(), 300)})
		case hs == nil:
			failed = append(failed, report.Finding{Code: report.DecisionFailed, Severity: report.Fail, Subject: o.Record.ID, Message: "the server sent no hidden states (return_hidden was asked)"})
		default:
			hc.Record(o.Record.ID, r, rerr, hs, nil)
		}
		em.send(jobs.Event{Note: fmt.Sprintf("captured %d of %d records from %s…", done, len(recs), clip(spec.Server, 120))})
	}})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := hc.Result()
	res.Add(failed...)
	if res.Summary.Compared == 0 {
		res.Add(report.Could(report.CheckEmpty, clip(spec.Server, 200), "no record's hidden states were captured and compared"))
	}
	note := fmt.Sprintf("captured live from %s; reference from %s", clip(spec.Server, 200), clip(from, 200))
	if len(failed) > 0 {
		note += fmt.Sprintf("; %d of %d requests failed (first: %s)", len(failed), len(recs), clip(failed[0].Message, 200))
	}
	res.Source = note
	return &jobs.Output{Hidden: res, Note: note, Markdown: HiddenMarkdown(res, note)}, nil
}

// liveInputs are a live capture's records (RecordFiles, else Site's demo
// records) and where their reference states are (Ref's hidden/, else
// Site's reference/hidden/).
func liveInputs(spec *jobs.Spec, h Host) (recs []refs.Record, refFS fs.FS, refDir, from string, err error) {
	var site fs.FS
	if spec.RecordFiles == nil || spec.Ref == nil {
		if site, err = open(h, spec.Site, "demo world"); err != nil {
			return nil, nil, "", "", err
		}
	}
	if spec.RecordFiles != nil {
		b := &batch{spec: spec, h: h}
		if err = b.records(); err != nil {
			return nil, nil, "", "", err
		}
		recs = b.recs
	} else if recs, _, err = readRecords(site, spec.Datasets); err != nil {
		return nil, nil, "", "", err
	}
	if spec.Ref == nil {
		return recs, site, "reference/hidden", "the demo world", nil
	}
	if refFS, err = open(h, spec.Ref, "reference"); err != nil {
		return nil, nil, "", "", err
	}
	return recs, refFS, "hidden", spec.Ref.String(), nil
}

// allMissing tells whether the candidate had none of the records.
func allMissing(res *report.Hidden) bool {
	for _, r := range res.Records {
		if r.Status != "missing" {
			return false
		}
	}
	return len(res.Records) > 0
}

// tolOf is the spec's hidden-state tolerances (zero: the defaults).
func tolOf(spec *jobs.Spec) report.HiddenTol {
	if spec.Tol != nil {
		return *spec.Tol
	}
	return report.HiddenTol{}
}

// runAnswers compares a folder of answers (Cand) with the reference
// answers (Ref), and with RecordFiles the known answers.
func runAnswers(spec *jobs.Spec, h Host) (*jobs.Output, error) {
	refFS, err := open(h, spec.Ref, "reference answers")
	if err != nil {
		return nil, err
	}
	candFS, err := open(h, spec.Cand, "answers")
	if err != nil {
		return nil, err
	}
	ref, err := refs.ReadReferenceAnswers(refFS, ".")
	if err != nil {
		return nil, fmt.Errorf("reference answers: %w", err)
	}
	cand, err := refs.ReadAnswers(candFS, ".")
	if err != nil {
		return nil, fmt.Errorf("answers: %w", err)
	}
	known := map[string]string{}
	if spec.RecordFiles != nil {
		fsys, err := open(h, spec.RecordFiles, "records")
		if err != nil {
			return nil, err
		}
		names, err := jsonlFiles(fsys)
		if err != nil {
			return nil, err
		}
		recs, err := compare.ReadRecords(fsys, names...)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.Answer != "" {
				known[r.ID] = r.Answer
			}
		}
	}
	res := compare.Answers(ref, cand, known)
	switch {
	case len(ref) == 0:
		res.Add(report.Could(report.CheckEmpty, spec.Ref.String(), "the reference folder holds no answers (<dataset>.jsonl): nothing to compare"))
	case len(cand) == 0: // not a candidate that answers nothing: no candidate at all
		res.Outcome = report.Outcome{}
		res.Add(report.Could(report.CheckEmpty, spec.Cand.String(), "the folder holds no answers (<dataset>.jsonl): nothing to compare"))
	}
	return &jobs.Output{Answers: res, Markdown: AnswersMarkdown(res)}, nil
}

// readRecords reads a demo world's records and reference answers.
func readRecords(site fs.FS, datasets []string) ([]refs.Record, map[string]*refs.Answer, error) {
	if len(datasets) == 0 {
		datasets = jobs.DemoDatasets
	}
	var recs []refs.Record
	ref := map[string]*refs.Answer{}
	for _, ds := range datasets {
		if !fs.ValidPath(ds) || strings.ContainsAny(ds, "/\\") {
			return nil, nil, fmt.Errorf("bad dataset name %q", clip(ds, 60))
		}
		rs, err := compare.ReadRecords(site, "records/"+ds+".jsonl")
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, rs...)
		data, err := source.ReadSmall(site, "reference/answers/"+ds+".jsonl", refLimit)
		if err != nil {
			return nil, nil, err
		}
		err = refs.ReadJSONL(bytes.NewReader(data), ds, func(line int, a *refs.Answer) error {
			if err := a.Check(); err != nil {
				return err
			}
			if err := refs.CheckDistribution(a.Probs); err != nil {
				return fmt.Errorf("reference %s: %w", clip(a.ID, 80), err)
			}
			ref[a.ID] = a
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return recs, ref, nil
}

func runRecords(spec *jobs.Spec, h Host) (*jobs.Output, error) {
	site, err := open(h, spec.Site, "demo world")
	if err != nil {
		return nil, err
	}
	recs, ref, err := readRecords(site, spec.Datasets)
	if err != nil {
		return nil, err
	}
	return &jobs.Output{Records: recs, RefAnswers: ref}, nil
}

// decider is a loaded demo model.
type decider struct{ m *model.Model }

func (d *decider) decide(id, prompt string, options []string) (*refs.Answer, error) {
	res, err := d.m.Forward(model.Tokenize(prompt, options), options)
	if err != nil {
		return nil, err
	}
	return &refs.Answer{ID: id, Options: options, Logits: res.Logits, Probs: res.Probs, Choice: options[res.Choice]}, nil
}

var (
	modelsMu sync.Mutex
	models   = map[string]*decider{}
)

// demoModel loads (once per site URL) the demo world's model: the base
// checkpoint with the adapter applied at run time, read by range.
func demoModel(h Host, site *jobs.Input) (*decider, error) {
	if site == nil {
		return nil, errors.New("no demo world given for the in-browser model")
	}
	key := site.URL
	modelsMu.Lock()
	defer modelsMu.Unlock()
	if d := models[key]; d != nil && key != "" {
		return d, nil
	}
	root, err := open(h, site, "demo world")
	if err != nil {
		return nil, err
	}
	base, err1 := fs.Sub(root, "base")
	ad, err2 := fs.Sub(root, "adapter")
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	head, err := model.LoadHead(root)
	if err != nil {
		return nil, fmt.Errorf("loading the demo model: %w", err)
	}
	m, err := model.Load(base, head, model.Options{Adapter: ad})
	if err != nil {
		return nil, fmt.Errorf("loading the demo model: %w", err)
	}
	d := &decider{m}
	if key != "" {
		models[key] = d
	}
	return d, nil
}
