package decision

import (
	"context"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/kvit-s/clefcheck/wasm/progress"
	"github.com/kvit-s/clefcheck/wasm/refs"
	"github.com/kvit-s/clefcheck/wasm/report"
)

// Outcome is one record's decision, or why it failed.
type Outcome struct {
	Record  refs.Record
	Resp    *Response
	Err     error
	Latency time.Duration
}

// Answer converts a successful outcome to the reference answer format.
func (o *Outcome) Answer() *refs.Answer {
	if o.Resp == nil {
		return nil
	}
	return &refs.Answer{ID: o.Record.ID, Options: o.Resp.Options, Logits: o.Resp.Logits, Probs: o.Resp.Probs, Choice: o.Resp.Choice}
}

// HiddenStates converts a successful outcome's hidden states, if any.
func (o *Outcome) HiddenStates() (*refs.Hidden, error) {
	if o.Resp == nil || o.Resp.Hidden == nil {
		return nil, nil
	}
	vals, err := o.Resp.Hidden.Floats()
	if err != nil {
		return nil, err
	}
	return &refs.Hidden{ID: o.Record.ID, Layers: o.Resp.Hidden.Layers, InputIDs: o.Resp.InputIDs, Shape: o.Resp.Hidden.Shape, Data: vals}, nil
}

// RunOptions configure a batch of decisions.
type RunOptions struct {
	Concurrency int
	Hidden      bool
	Progress    func(progress.Status) // counts records
	OnOutcome   func(*Outcome)        // called as each finishes (from any goroutine)
}

// Run sends every record with at most Concurrency requests in flight and
// returns the outcomes in record order.
func Run(ctx context.Context, c *Client, recs []refs.Record, opt RunOptions) []*Outcome {
	n := max(1, opt.Concurrency)
	out := make([]*Outcome, len(recs))
	meter := progress.NewMeter("decisions", int64(len(recs)), opt.Progress)
	meter.Unit = "records"
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r := recs[i]
				start := time.Now()
				resp, err := c.Decide(ctx, &Request{ID: r.ID, Prompt: r.Prompt, Options: r.Options, ReturnHidden: opt.Hidden})
				o := &Outcome{Record: r, Resp: resp, Err: err, Latency: time.Since(start)}
				out[i] = o
				meter.Add(1)
				if opt.OnOutcome != nil {
					opt.OnOutcome(o)
				}
			}
		}()
	}
	for i := range recs {
		if ctx.Err() != nil {
			out[i] = &Outcome{Record: recs[i], Err: ctx.Err()}
			continue
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	meter.Finish()
	return out
}

// Latency is report.Latency.
type Latency = report.Latency

// Latencies computes percentiles (nearest rank) over successful outcomes;
// wall is the batch's wall time, for the throughput.
func Latencies(os []*Outcome, wall time.Duration) Latency {
	var ms []float64
	for _, o := range os {
		if o != nil && o.Resp != nil {
			ms = append(ms, float64(o.Latency.Microseconds())/1000)
		}
	}
	l := Latency{N: len(ms)}
	if len(ms) == 0 {
		return l
	}
	sort.Float64s(ms)
	pct := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(ms)))) - 1
		return ms[max(0, min(len(ms)-1, i))]
	}
	l.P50, l.P90, l.P99, l.Max = pct(50), pct(90), pct(99), ms[len(ms)-1]
	if wall > 0 {
		l.Throughput = float64(len(ms)) / wall.Seconds()
	}
	return l
}
