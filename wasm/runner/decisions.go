package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/compare"
	"github.com/kvit-s/clefcheck/wasm/decision"
	"github.com/kvit-s/clefcheck/wasm/jobs"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// isCORS tells whether a failed request looks like the browser's CORS
// refusal (fetch() rejects with a bare TypeError then).
func isCORS(msg string) bool {
	return strings.Contains(msg, "CORS") || strings.Contains(msg, "fetch() failed")
}

// batch is a decisions job under way: the records, the references, and
// what has been gathered from the outcomes so far.
type batch struct {
	spec     *jobs.Spec
	h        Host
	recs     []report.Record
	ref      map[string]*report.Answer // nil: no reference answers
	refFS    fs.FS                     // the reference folder (answers/, hidden/), if given
	mu       sync.Mutex
	col      report.Collector
	hidden   *compare.HiddenComparer // with spec.Hidden and a reference folder
	captured int                     // hidden states received
	saveErr  error
}

// records are the spec's records: given inline, or read from RecordFiles.
func (b *batch) records() error {
	b.recs = b.spec.Records
	if b.spec.RecordFiles != nil {
		fsys, err := open(b.h, b.spec.RecordFiles, "records")
		if err != nil {
			return err
		}
		names, err := jsonlFiles(fsys)
		if err != nil {
			return err
		}
		if len(names) == 0 {
			return errors.New("records: no .jsonl file")
		}
		rs, err := compare.ReadRecords(fsys, names...)
		if err != nil {
			return err
		}
		b.recs = append(b.recs, rs...)
	}
	switch {
	case len(b.recs) == 0:
		return errors.New("no records to send")
	case len(b.recs) > jobs.MaxRecords:
		return fmt.Errorf("%d records: at most %d in one batch", len(b.recs), jobs.MaxRecords)
	}
	return nil
}

// jsonlFiles lists the *.jsonl files at the root of fsys, sorted.
func jsonlFiles(fsys fs.FS) ([]string, error) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".jsonl") {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// references reads the reference answers (inline, or Ref's answers/) of
// the records sent.
func (b *batch) references() error {
	b.ref = b.spec.RefAnswers
	if b.spec.Ref != nil {
		var err error
		if b.refFS, err = open(b.h, b.spec.Ref, "reference"); err != nil {
			return err
		}
		if b.ref, err = refs.ReadReferenceAnswers(b.refFS, "answers"); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
		if b.spec.Hidden {
			tol := report.HiddenTol{}
			if b.spec.Tol != nil {
				tol = *b.spec.Tol
			}
			b.hidden = compare.NewHiddenComparer(tol)
		}
	}
	if b.ref != nil {
		inRun := map[string]bool{}
		for _, r := range b.recs {
			inRun[r.ID] = true
		}
		sent := map[string]*report.Answer{}
		for id, a := range b.ref { // compare only the records sent
			if inRun[id] {
				sent[id] = a
			}
		}
		b.ref = sent
	}
	return nil
}

// row is an outcome as a decision row.
func (b *batch) row(o *decision.Outcome) report.DecisionRow {
	r := report.DecisionRow{ID: o.Record.ID, Dataset: o.Record.Dataset, Known: o.Record.Answer, Status: report.Answered,
		LatencyMS: float64(o.Latency.Microseconds()) / 1000}
	if a := b.ref[o.Record.ID]; a != nil {
		r.Reference = a.Choice
	}
	if o.Err != nil {
		r.Status, r.Error = report.Failed, o.Err.Error()
		r.CORS = isCORS(r.Error)
	} else if o.Resp != nil {
		r.Choice = o.Resp.Choice
	}
	return r
}

// outcome takes one finished decision (from any goroutine): its hidden
// states are compared and saved now, then dropped.
func (b *batch) outcome(o *decision.Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o.Err != nil {
		b.col.Add(decisionFailed(o.Record.ID, o.Err))
		return
	}
	if !b.spec.Hidden {
		return
	}
	hs, err := o.HiddenStates()
	if o.Resp != nil {
		o.Resp.Hidden = nil // the states are not kept past this point
	}
	switch {
	case err != nil:
		b.col.Addf(report.DecisionFailed, report.Fail, o.Record.ID, nil, nil, "hidden states: %v", err)
	case hs == nil:
		b.col.Addf(report.DecisionFailed, report.Fail, o.Record.ID, nil, nil, "the server sent no hidden states (return_hidden was asked)")
	default:
		b.captured++
		if b.spec.Save && b.h.Create != nil && b.saveErr == nil {
			var buf bytes.Buffer
			if b.saveErr = hs.Encode(&buf, "F32"); b.saveErr == nil {
				b.saveErr = save(b.h, path.Join("hidden", refs.FileName(hs.ID)), buf.Bytes())
			}
		}
	}
	if b.hidden != nil && (err != nil || hs != nil) {
		r, rerr := refs.ReadHidden(b.refFS, path.Join("hidden", refs.FileName(o.Record.ID)))
		b.hidden.Record(o.Record.ID, r, rerr, hs, err)
	}
}

// decisionFailed is the finding for a failed request. A server that
// answers against the protocol fails (it is the server under test that is
// wrong); one that cannot be reached, times out, refuses or answers an
// HTTP error leaves the record unchecked (severity error), with a hint.
func decisionFailed(id string, err error) report.Finding {
	f := report.Finding{Code: report.DecisionFailed, Severity: report.Unchecked, Subject: id, Message: clip(err.Error(), 600)}
	var de *decision.Error
	if errors.As(err, &de) {
		switch {
		case de.Kind == "protocol":
			f.Severity = report.Fail
		case de.Status == 401 || de.Status == 403:
			f.Message += " — the server wants a token, or this one lacks access"
		case de.Status == 404 || de.Status == 405:
			f.Message += " — is this the decision service's base URL? It has no POST " + decision.Path
		case de.Kind == "network" && de.Hint == "":
			f.Message += " — the server could not be reached: is it running, and is the URL right?"
		}
	}
	return f
}

// save writes one output file through the host.
func save(h Host, name string, data []byte) error {
	w, err := h.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func runDecisions(ctx context.Context, spec *jobs.Spec, h Host, em *emitter) (*jobs.Output, error) {
	b := &batch{spec: spec, h: h}
	if err := b.records(); err != nil {
		return nil, err
	}
	if err := b.references(); err != nil {
		return nil, err
	}
	if spec.Save && h.Create == nil {
		return nil, errors.New("this host cannot save the answers")
	}
	emitRow := func(o *decision.Outcome) {
		r := b.row(o)
		em.send(jobs.Event{Row: &r})
	}
	start := time.Now()
	var outs []*decision.Outcome
	server := spec.Server
	if spec.Browser {
		server = "the demo model in the browser"
		d, err := demoModel(h, spec.Site)
		if err != nil {
			return nil, err
		}
		for _, rec := range b.recs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			t0 := time.Now()
			a, err := d.decide(rec.ID, rec.Prompt, rec.Options)
			o := &decision.Outcome{Record: rec, Err: err, Latency: time.Since(t0)}
			if err == nil {
				o.Resp = &decision.Response{ID: a.ID, Choice: a.Choice, Options: a.Options, Logits: a.Logits, Probs: a.Probs}
			}
			outs = append(outs, o)
			b.outcome(o)
			emitRow(o)
			if h.Yield != nil {
				if err := h.Yield(); err != nil {
					return nil, err
				}
			}
		}
	} else {
		c := &decision.Client{BaseURL: spec.Server, Token: spec.Token, Timeout: spec.Timeout}
		if c.Timeout <= 0 {
			c.Timeout = 60 * time.Second
		}
		if _, err := c.Endpoint(); err != nil {
			return nil, err
		}
		conc := max(1, min(jobs.MaxConcurrency, spec.Concurrency))
		outs = decision.Run(ctx, c, b.recs, decision.RunOptions{Concurrency: conc, Hidden: spec.Hidden, Progress: em.status,
			OnOutcome: func(o *decision.Outcome) {
				b.outcome(o)
				emitRow(o)
			}})
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	wall := time.Since(start)
	return b.finish(outs, server, wall)
}

// finish totals the batch: rows in record order, the answers compared with
// the reference, the hidden states' comparison, the verdict.
func (b *batch) finish(outs []*decision.Outcome, server string, wall time.Duration) (*jobs.Output, error) {
	res := &report.Decisions{Summary: report.DecisionsSummary{Server: server, Records: len(outs), Seconds: wall.Seconds(), Latency: decision.Latencies(outs, wall)}}
	cand := map[string]*report.Answer{}
	known := map[string]string{}
	byDataset := map[string][]*report.Answer{}
	for _, o := range outs {
		r := b.row(o)
		res.Records = append(res.Records, r)
		if r.Status == report.Failed {
			res.Summary.Failed++
		} else {
			res.Summary.Answered++
		}
		if a := o.Answer(); a != nil {
			cand[a.ID] = a
			byDataset[o.Record.Dataset] = append(byDataset[o.Record.Dataset], a)
		}
		if o.Record.Answer != "" {
			known[o.Record.ID] = o.Record.Answer
		}
	}
	if b.spec.Save {
		ds := make([]string, 0, len(byDataset))
		for d := range byDataset {
			ds = append(ds, d)
		}
		sort.Strings(ds)
		for _, d := range ds {
			if !fs.ValidPath(d) || strings.ContainsAny(d, "/\\") || d == "." {
				return nil, fmt.Errorf("cannot save answers: bad dataset name %q", clip(d, 60))
			}
			var buf bytes.Buffer
			if err := refs.WriteAnswers(&buf, byDataset[d]); err != nil {
				return nil, err
			}
			if err := save(b.h, path.Join("answers", d+".jsonl"), buf.Bytes()); err != nil {
				return nil, fmt.Errorf("saving the answers: %w", err)
			}
		}
		if b.saveErr != nil {
			return nil, fmt.Errorf("saving the hidden states: %w", b.saveErr)
		}
	}
	if b.ref != nil && len(b.ref) == 0 {
		b.col.Add(report.Could(report.CheckEmpty, "reference", "none of the %d records sent has a reference answer: nothing to compare (are these the reference's records?)", len(outs)))
	}
	if res.Summary.Answered == 0 {
		b.col.Add(report.Could(report.CheckEmpty, server, "no record was answered: nothing was checked"))
	}
	if len(b.ref) > 0 {
		ar := compare.Answers(b.ref, cand, known)
		res.Summary.Answers = &ar.Summary
		agree := ar.Summary.Agree
		res.Summary.Agree = &agree
		for _, f := range ar.Findings {
			if cand[f.Subject] == nil && b.ref[f.Subject] != nil {
				continue // a failed decision: already a decision.failed finding
			}
			b.col.Add(f)
		}
	}
	if b.hidden != nil {
		hr := b.hidden.Result()
		res.Summary.Hidden = &hr.Summary
		if hr.Summary.Compared == 0 && res.Summary.Answered > 0 {
			b.col.Add(report.Could(report.CheckEmpty, "hidden states", "no record's hidden states could be compared with the reference"))
		}
		for _, f := range hr.Findings {
			if f.Severity != report.Info {
				b.col.Add(f)
			}
		}
	}
	res.Outcome = b.col.Outcome()
	return &jobs.Output{Decisions: res, Markdown: DecisionsMarkdown(res)}, nil
}

func runDecide(ctx context.Context, spec *jobs.Spec, h Host) (*jobs.Output, error) {
	req := &decision.Request{ID: "demo", Prompt: spec.Prompt, Options: spec.Options}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	out := &report.Decided{Options: req.Options}
	if spec.Browser {
		d, err := demoModel(h, spec.Site)
		if err != nil {
			return nil, err
		}
		a, err := d.decide(req.ID, req.Prompt, req.Options)
		if err != nil {
			return nil, err
		}
		out.Choice, out.Probs = a.Choice, a.Probs
	} else {
		r, err := (&decision.Client{BaseURL: spec.Server, Token: spec.Token, Timeout: 60 * time.Second}).Decide(ctx, req)
		if err != nil {
			return nil, err
		}
		out.Choice, out.Probs = r.Choice, r.Probs
	}
	out.MS = float64(time.Since(start).Microseconds()) / 1000
	return &jobs.Output{Decided: out}, nil
}
