package progress

import (
	"fmt"
	"strings"
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

// String renders a status for a terminal: the phase, then what is known
// of it — the percent and the sizes once the total is known, the rate once
// something was done, the ETA once it can be estimated — and never a
// figure that is not known yet ("0 B/0 B", "ETA 0s").
func (s Status) String() string {
	parts := []string{s.Phase}
	if s.Phase == "" {
		parts[0] = "working"
	}
	count := func(n int64) string {
		if s.Unit != "" {
			return fmt.Sprint(n)
		}
		return Bytes(n)
	}
	unit := ""
	if s.Unit != "" {
		unit = " " + s.Unit
	}
	switch {
	case s.Total > 0:
		parts = append(parts, fmt.Sprintf("%.1f%%", 100*s.Fraction()), count(s.Done)+" of "+count(s.Total)+unit)
	case s.Done > 0:
		parts = append(parts, count(s.Done)+unit)
	}
	if s.Done > 0 && s.Rate > 0 {
		if s.Unit != "" {
			parts = append(parts, fmt.Sprintf("%.1f %s/s", s.Rate, s.Unit))
		} else {
			parts = append(parts, Bytes(int64(s.Rate))+"/s")
		}
	}
	if s.Final {
		parts = append(parts, "done in "+s.Elapsed.Round(100*time.Millisecond).String())
	} else if s.ETA > 0 && s.Done > 0 && s.Total > 0 {
		parts = append(parts, "about "+s.ETA.Round(time.Second).String()+" left")
	}
	return strings.Join(parts, " · ")
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
