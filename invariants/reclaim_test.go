package invariants

import (
	"errors"
	"strings"
	"testing"
)

func TestIncarnationOfReadsThePartitionDirectoryName(t *testing.T) {
	cases := []struct {
		name string
		id   uint64
		ok   bool
	}{
		{"parts/00000000000000ff-3/", 255, true},
		{"acks/0000000000000010-0/seg", 16, true},
		{"wal/00000000000000ff-3/", 0, false},   // not a partition root
		{"parts/00000000000000ff3/", 0, false},  // no hyphen
		{"parts/ff-3/", 0, false},               // too short
		{"parts/zzzzzzzzzzzzzzzz-3/", 0, false}, // not hexadecimal
		{"parts", 0, false},                     // no slash
	}
	for _, c := range cases {
		id, ok := IncarnationOf(c.name)
		if id != c.id || ok != c.ok {
			t.Errorf("IncarnationOf(%q) = %d, %v; want %d, %v", c.name, id, ok, c.id, c.ok)
		}
	}
}

type fakeLister map[string][]string

func (f fakeLister) ListDirs(dir string) ([]string, error) {
	if names, ok := f[dir]; ok {
		return names, nil
	}
	return nil, errors.New("no such directory")
}

func TestLeftDirsListsOnlyDeletedIncarnations(t *testing.T) {
	d := fakeLister{
		"parts": {"0000000000000001-0", "0000000000000002-0", "junk"},
		"acks":  {"0000000000000001-1"},
	}
	got := LeftDirs(d, func(id uint64) bool { return id == 1 })
	want := "parts/0000000000000001-0 acks/0000000000000001-1"
	if strings.Join(got, " ") != want {
		t.Fatalf("LeftDirs = %v; want %s", got, want)
	}
}

// clockSteps is a simulation whose every step advances the clock by stepNs.
type clockSteps struct{ now, stepNs int64 }

func (c *clockSteps) step() bool { c.now += c.stepNs; return true }

func TestAwaitReclaimedEndsWhenNothingIsLeft(t *testing.T) {
	c := &clockSteps{stepNs: 10_000_000}
	left := func() ([]string, bool) {
		if c.now < 2_000_000_000 {
			return []string{"parts/0000000000000001-0"}, true
		}
		return nil, true
	}
	if err := AwaitReclaimed(func() int64 { return c.now }, c.step, left); err != nil {
		t.Fatal(err)
	}
	if c.now < 2_000_000_000 || c.now > 2_000_000_000+reclaimLookNs {
		t.Fatalf("ended at %d ns; want within one look of 2 s", c.now)
	}
}

func TestAwaitReclaimedFailsAfterTheBound(t *testing.T) {
	c := &clockSteps{stepNs: 10_000_000}
	left := func() ([]string, bool) { return []string{"n1:parts/0000000000000001-0"}, true }
	err := AwaitReclaimed(func() int64 { return c.now }, c.step, left)
	if err == nil || !strings.Contains(err.Error(), "n1:parts/0000000000000001-0") {
		t.Fatalf("err = %v; want the leftover named", err)
	}
	if c.now <= ReclaimBoundNs {
		t.Fatalf("failed at %d ns, before the bound", c.now)
	}
}

func TestAwaitReclaimedDoesNotJudgeWhileItCannotLook(t *testing.T) {
	c := &clockSteps{stepNs: 10_000_000}
	left := func() ([]string, bool) {
		if c.now < 2*ReclaimBoundNs { // the node is down past the bound, then clean
			return nil, false
		}
		return nil, true
	}
	if err := AwaitReclaimed(func() int64 { return c.now }, c.step, left); err != nil {
		t.Fatal(err)
	}
}

func TestAwaitReclaimedStopsWhenTheRunStops(t *testing.T) {
	steps := 0
	step := func() bool { steps++; return steps < 3 }
	left := func() ([]string, bool) { return []string{"parts/0000000000000001-0"}, true }
	if err := AwaitReclaimed(func() int64 { return 0 }, step, left); err != nil || steps != 3 {
		t.Fatalf("err = %v after %d steps; want nil after 3", err, steps)
	}
}
