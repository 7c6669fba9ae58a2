package main

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestOneSeedPrintsOptionsAndVerdict(t *testing.T) {
	for sim, prefix := range map[string]string{"wal": "seed=3 clients=", "node": "seed=3 producers="} {
		var out, errOut bytes.Buffer
		if code := run([]string{"-sim", sim, "-seed", "3"}, &out, &errOut); code != 0 {
			t.Fatalf("%s: exit %d: %s%s", sim, code, out.String(), errOut.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if !strings.HasPrefix(lines[0], prefix) {
			t.Fatalf("%s: first line should give the drawn options: %q", sim, lines[0])
		}
		if !regexp.MustCompile(`^seed=3 trace=[0-9a-f]{16} verdict=ok$`).MatchString(lines[len(lines)-1]) {
			t.Fatalf("%s: last line: %q", sim, lines[len(lines)-1])
		}
	}
}

func TestRangeAndBadArguments(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-seeds", "1-3"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "seeds=1-3 failed=0 verdict=ok") {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	first := out.String()
	out.Reset()
	if run([]string{"-seeds", "1-3", "-j", "1"}, &out, &errOut); out.String() != first || !strings.Contains(first, " traces=") {
		t.Fatalf("a sweep's summary differs between runs (or lacks its digest):\n%s\n%s", first, out.String())
	}
	for _, args := range [][]string{{}, {"-seeds", "5-1"}, {"-seeds", "x"}, {"-sim", "nosuch", "-seed", "1"}} {
		if code := run(args, &out, &errOut); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestCheckName(t *testing.T) {
	for text, want := range map[string]string{
		"t=5ns: invariant 9: record leased twice":       "invariant-9",
		"t=5ns: invariant 10: duplicate with no cause":  "invariant-10",
		"t=1ns: linearizability: partition 3 went back": "linearizability",
		"t=2ns: access: node 5 served a routed consume": "access",
		"t=1ns: liveness: 4 events at one instant":      "liveness",
		"t=3ns: readiness: node 2 answered ready":       "readiness",
		"t=3ns: forget: replica 2 keeps member 1":       "forget",
		"t=3ns: decommission: node 5 is not removed":    "decommission",
		"t=3ns: moves: replica 2 has partition 1":       "moves",
		"t=1ns: node 3 answered unknown token 4":        "unnamed",
		"invariant 1: acked seq 4 lost":                 "invariant-1",
	} {
		if got := checkName(errors.New(text)); got != want {
			t.Errorf("%q: %q, want %q", text, got, want)
		}
	}
}
