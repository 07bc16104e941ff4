package kernels

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

type sum func([]float64) float64

func portableSum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func TestSlot(t *testing.T) {
	s := NewSlot[sum]("test-sum", portableSum)
	if _, portable := s.Current(); !portable || s.Name() != Portable {
		t.Fatalf("a new slot is not on its portable kernel: %s", s.Name())
	}
	doubled := func(x []float64) float64 { return 2 * portableSum(x) }
	check := func(c, p sum) error {
		x := []float64{1, 2, 3}
		if c(x) != p(x) {
			return fmt.Errorf("%g, want %g", c(x), p(x))
		}
		return nil
	}
	if err := s.Try("wrong", doubled, check); err == nil || s.Name() != Portable {
		t.Fatalf("a wrong kernel was installed (%v, active %s)", err, s.Name())
	}
	if err := s.Try("unrolled", func(x []float64) float64 { return portableSum(x) }, check); err != nil {
		t.Fatal(err)
	}
	if _, portable := s.Current(); portable || s.Name() != "unrolled" || s.Get()([]float64{4}) != 4 {
		t.Fatalf("active %s", s.Name())
	}
	if !strings.Contains(String(), "test-sum=unrolled") {
		t.Errorf("String() = %q", String())
	}
	s.Reset()
	if s.Name() != Portable || fmt.Sprint(s.Names()) != "[go unrolled]" || len(s.Candidates()) != 1 {
		t.Fatalf("after Reset: %s %v", s.Name(), s.Names())
	}
	if err := s.Use("unrolled"); err != nil || s.Name() != "unrolled" {
		t.Fatalf("Use: %v %s", err, s.Name())
	}
	if err := s.Use("nope"); err == nil {
		t.Error("Use accepted an unknown kernel")
	}
	var got []Status
	for _, st := range List() {
		if st.Slot == "test-sum" {
			got = append(got, st)
		}
	}
	if len(got) != 1 || got[0].Active != "unrolled" {
		t.Errorf("List: %+v", got)
	}
	if err := s.Try("x", doubled, func(sum, sum) error { return errors.New("no") }); err == nil || !strings.Contains(err.Error(), "test-sum") {
		t.Errorf("rejection: %v", err)
	}
}

func ExampleSlot() {
	sumSlot := NewSlot[sum]("example-sum", portableSum)
	pairwise := func(x []float64) float64 { // a candidate: the same sum, in another order
		if len(x) < 2 {
			return portableSum(x)
		}
		return portableSum(x[:len(x)/2]) + portableSum(x[len(x)/2:])
	}
	err := sumSlot.Try("pairwise", pairwise, func(c, p sum) error {
		x := []float64{1, 2, 3, 4}
		if d := c(x) - p(x); d*d > 1e-24 {
			return fmt.Errorf("off by %g", d)
		}
		return nil
	})
	fmt.Println(err, sumSlot.Name(), sumSlot.Names(), sumSlot.Get()([]float64{1, 2, 3, 4}))
	sumSlot.Reset()
	fmt.Println(sumSlot.Name())
	// Output:
	// <nil> pairwise [go pairwise] 10
	// go
}
