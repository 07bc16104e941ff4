package progress

import (
	"strings"
	"testing"
	"time"
)

func TestMeterThrottlesAndFinishes(t *testing.T) {
	var got []Status
	m := NewMeter("read", 1000, func(s Status) { got = append(got, s) })
	m.Interval = time.Hour
	for i := 0; i < 100; i++ {
		m.Add(10)
	}
	if len(got) != 0 {
		t.Fatalf("%d reports inside the interval", len(got))
	}
	s := m.Finish()
	if len(got) != 1 || !s.Final || s.Done != 1000 || s.Fraction() != 1 || s.ETA != 0 {
		t.Fatalf("final = %+v (%d reports)", s, len(got))
	}
	m2 := NewMeter("read", 100, func(s Status) { got = append(got, s) })
	m2.Interval = 0
	m2.Add(50)
	if last := got[len(got)-1]; last.Done != 50 || last.ETA < 0 || !strings.Contains(last.String(), "50.0%") {
		t.Errorf("status = %+v %q", last, last.String())
	}
	if Bytes(1400733696) != "1.40 GB" {
		t.Errorf("Bytes = %s", Bytes(1400733696))
	}
}
