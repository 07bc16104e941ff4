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

// TestStatusStringShowsOnlyWhatIsKnown: no "0.0% 0 B/0 B 0 B/s ETA 0s"
// before the sizes are known; sizes, rate and ETA once they are.
func TestStatusStringShowsOnlyWhatIsKnown(t *testing.T) {
	for _, c := range []struct {
		s       Status
		want    string
		notWant []string
	}{
		{Status{Phase: "randomized audit", ETA: -1}, "randomized audit", []string{"%", "B/s", "ETA", "0 B", "left"}},
		{Status{Phase: "randomized audit", ETA: 0}, "randomized audit", []string{"%", "left", "0s"}},
		{Status{Phase: "read", Done: 500e6, Total: 1400e6, Rate: 100e6, ETA: 9 * time.Second}, "read · 35.7% · 500.0 MB of 1.40 GB · 100.0 MB/s · about 9s left", nil},
		{Status{Phase: "decisions", Unit: "records", Done: 3, Total: 36, Rate: 2, ETA: 16500 * time.Millisecond}, "decisions · 8.3% · 3 of 36 records · 2.0 records/s · about 17s left", nil},
		{Status{Phase: "read", Done: 10, Total: 10, Rate: 5, Elapsed: 2 * time.Second, Final: true}, "read · 100.0% · 10 B of 10 B · 5 B/s · done in 2s", []string{"left"}},
	} {
		got := c.s.String()
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.s, got, c.want)
		}
		for _, b := range c.notWant {
			if strings.Contains(got, b) {
				t.Errorf("%+v: %q shows %q", c.s, got, b)
			}
		}
	}
}
