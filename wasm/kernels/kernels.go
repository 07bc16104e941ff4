package kernels

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Portable is the name of every slot's portable kernel.
const Portable = "go"

// Kernel is one named implementation of a slot.
type Kernel[F any] struct {
	Name string
	Fn   F
}

// Slot holds the kernels of one swappable loop, F being its function (or
// struct of functions) type.
type Slot[F any] struct {
	name     string
	portable *Kernel[F]
	active   atomic.Pointer[Kernel[F]]
	mu       sync.Mutex
	known    []*Kernel[F] // candidates other than the portable one, in order of registration
}

// lister is what the registry keeps of a slot, whatever its F.
type lister interface {
	slotName() string
	Name() string
	Names() []string
}

var (
	regMu sync.Mutex
	slots []lister
)

// NewSlot registers a slot called name whose portable kernel is portable;
// it starts active. Slots are made once, in package variables.
func NewSlot[F any](name string, portable F) *Slot[F] {
	s := &Slot[F]{name: name, portable: &Kernel[F]{Name: Portable, Fn: portable}}
	s.active.Store(s.portable)
	regMu.Lock()
	defer regMu.Unlock()
	for _, o := range slots {
		if o.slotName() == name {
			panic("kernels: slot " + name + " registered twice")
		}
	}
	slots = append(slots, s)
	return s
}

func (s *Slot[F]) slotName() string { return s.name }

// Get returns the active kernel's function (the hot path: one atomic load).
func (s *Slot[F]) Get() F { return s.active.Load().Fn }

// Current returns the active kernel's function and whether it is the
// portable one (callers whose portable path differs from "the kernel on the
// bulk, the portable loop on the tail" take their own path then).
func (s *Slot[F]) Current() (fn F, portable bool) {
	k := s.active.Load()
	return k.Fn, k == s.portable
}

// Name is the active kernel's name.
func (s *Slot[F]) Name() string { return s.active.Load().Name }

// Portable returns the portable kernel's function, the reference a
// candidate is checked against.
func (s *Slot[F]) Portable() F { return s.portable.Fn }

// Names lists the kernels the slot knows: the portable one first, then the
// candidates in order of registration.
func (s *Slot[F]) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{Portable}
	for _, k := range s.known {
		out = append(out, k.Name)
	}
	return out
}

// Candidates returns the kernels other than the portable one (for tests
// that compare each with the portable kernel).
func (s *Slot[F]) Candidates() []Kernel[F] {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Kernel[F], len(s.known))
	for i, k := range s.known {
		out[i] = *k
	}
	return out
}

// Install makes fn, called name, the active kernel, adding it to the
// candidates (replacing one of the same name). The caller vouches for it:
// it has been checked against Portable (the browser's SIMD kernels are,
// all together, before they are installed). name must not be Portable.
func (s *Slot[F]) Install(name string, fn F) {
	if name == Portable {
		panic("kernels: a candidate cannot be called " + Portable)
	}
	k := &Kernel[F]{Name: name, Fn: fn}
	s.mu.Lock()
	i := slices.IndexFunc(s.known, func(o *Kernel[F]) bool { return o.Name == name })
	if i >= 0 {
		s.known[i] = k
	} else {
		s.known = append(s.known, k)
	}
	s.mu.Unlock()
	s.active.Store(k)
}

// Try checks fn against the portable kernel with check(fn, Portable()) and
// installs it only if check returns nil; otherwise the slot is unchanged
// and the error says why.
func (s *Slot[F]) Try(name string, fn F, check func(candidate, portable F) error) error {
	if err := check(fn, s.portable.Fn); err != nil {
		return fmt.Errorf("kernels: %s kernel %q rejected: %w", s.name, name, err)
	}
	s.Install(name, fn)
	return nil
}

// Use makes the known kernel called name active again (Portable for the
// portable one).
func (s *Slot[F]) Use(name string) error {
	if name == Portable {
		s.active.Store(s.portable)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.known {
		if k.Name == name {
			s.active.Store(k)
			return nil
		}
	}
	return fmt.Errorf("kernels: slot %s has no kernel %q (it has %s)", s.name, name, strings.Join(append([]string{Portable}, names(s.known)...), ", "))
}

// Reset makes the portable kernel active; the candidates stay known.
func (s *Slot[F]) Reset() { s.active.Store(s.portable) }

func names[F any](ks []*Kernel[F]) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	return out
}

// Status is what List says about one slot.
type Status struct {
	Slot   string   `json:"slot"`
	Active string   `json:"active"`
	Known  []string `json:"known"` // the portable kernel first
}

// List says, for every registered slot in name order, which kernel is
// active and which are known. Slots register when their package is linked
// (dtype, spectral).
func List() []Status {
	regMu.Lock()
	ss := slices.Clone(slots)
	regMu.Unlock()
	out := make([]Status, len(ss))
	for i, s := range ss {
		out[i] = Status{Slot: s.slotName(), Active: s.Name(), Known: s.Names()}
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Slot, b.Slot) })
	return out
}

// String is List in one line: "slot=active slot=active ...".
func String() string {
	var parts []string
	for _, s := range List() {
		parts = append(parts, s.Slot+"="+s.Active)
	}
	return strings.Join(parts, " ")
}
