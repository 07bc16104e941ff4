package progress

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Status is one report of a job's progress.
type Status struct {
	Phase   string        `json:"phase"`
	Done    int64         `json:"done"`  // bytes (or units) done
	Total   int64         `json:"total"` // bytes (or units) in all
	Elapsed time.Duration `json:"elapsed"`
	Rate    float64       `json:"rate"` // per second
	ETA     time.Duration `json:"eta"`  // -1 when unknown
	Final   bool          `json:"final"`
	Unit    string        `json:"unit,omitempty"` // "" for bytes, else what is counted ("records")
}

// Fraction is Done/Total in [0, 1].
func (s Status) Fraction() float64 {
	if s.Total <= 0 {
		return 0
	}
	return min(1, float64(s.Done)/float64(s.Total))
}

// String renders a status for a terminal: phase, percent, bytes, rate, ETA.
func (s Status) String() string {
	eta := "?"
	if s.ETA >= 0 {
		eta = s.ETA.Round(100 * time.Millisecond).String()
	}
	if s.Unit != "" {
		return fmt.Sprintf("%s %5.1f%% %d/%d %s, %.1f/s, ETA %s", s.Phase, 100*s.Fraction(), s.Done, s.Total, s.Unit, s.Rate, eta)
	}
	return fmt.Sprintf("%s %5.1f%% %s/%s %s/s ETA %s", s.Phase, 100*s.Fraction(), Bytes(s.Done), Bytes(s.Total), Bytes(int64(s.Rate)), eta)
}

// Bytes formats a byte count with a binary-free decimal unit (the card says 1.40 GB).
func Bytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// Meter counts work done from any goroutine and calls Report at most once
// per Interval (and once at Finish).
type Meter struct {
	Phase    string
	Unit     string // "" for bytes
	Total    int64
	Interval time.Duration
	Report   func(Status) // may be nil
	start    time.Time
	done     atomic.Int64
	mu       sync.Mutex
	last     time.Time
}

// NewMeter starts a meter.
func NewMeter(phase string, total int64, report func(Status)) *Meter {
	now := time.Now()
	return &Meter{Phase: phase, Total: total, Interval: 200 * time.Millisecond, Report: report, start: now, last: now}
}

// Add records n more units done and reports if the interval has passed.
func (m *Meter) Add(n int64) {
	d := m.done.Add(n)
	if m.Report == nil {
		return
	}
	now := time.Now()
	m.mu.Lock()
	if now.Sub(m.last) < m.Interval {
		m.mu.Unlock()
		return
	}
	m.last = now
	m.mu.Unlock()
	m.Report(m.status(d, now, false))
}

// Finish sends the final report.
func (m *Meter) Finish() Status {
	s := m.status(m.done.Load(), time.Now(), true)
	if m.Report != nil {
		m.Report(s)
	}
	return s
}

// Done is the count so far.
func (m *Meter) Done() int64 { return m.done.Load() }

func (m *Meter) status(d int64, now time.Time, final bool) Status {
	el := now.Sub(m.start)
	s := Status{Phase: m.Phase, Done: d, Total: m.Total, Elapsed: el, ETA: -1, Final: final, Unit: m.Unit}
	if sec := el.Seconds(); sec > 0 {
		s.Rate = float64(d) / sec
	}
	if s.Rate > 0 && m.Total >= d {
		s.ETA = time.Duration(float64(m.Total-d) / s.Rate * float64(time.Second))
	}
	return s
}
