package access_test

import (
	"reflect"
	"testing"

	"github.com/narad/narad/core/access"
	"pgregory.net/rapid"
)

var patternGen = rapid.OneOf(
	rapid.StringMatching(`[a-c.]{1,4}`),
	rapid.StringMatching(`[a-c.]{0,3}\*`),
)

func grantsGen() *rapid.Generator[[]access.Grant] {
	return rapid.Custom(func(t *rapid.T) []access.Grant {
		n := rapid.IntRange(0, 6).Draw(t, "grants")
		gs := make([]access.Grant, n)
		for i := range gs {
			a := rapid.SampledFrom(access.Actions[:3]).Draw(t, "action")
			gs[i] = access.Grant{Action: a, Patterns: rapid.SliceOfN(patternGen, 1, 4).Draw(t, "patterns")}
		}
		return gs
	})
}

// Normalize keeps exactly the rights of the list it was given, and is idempotent.
func TestNormalizeKeepsRights(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gs := grantsGen().Draw(t, "gs")
		ns, err := access.Normalize(gs)
		if err != nil {
			t.Skip("drew an invalid pattern (e.g. . or ..)")
		}
		again, err := access.Normalize(ns)
		if err != nil || !reflect.DeepEqual(again, ns) {
			t.Fatalf("not idempotent: %+v then %+v, %v", ns, again, err)
		}
		topic := rapid.StringMatching(`[a-c.]{1,5}`).Draw(t, "topic")
		for _, a := range access.Actions {
			if access.Allows(gs, a, topic) != access.Allows(ns, a, topic) {
				t.Fatalf("%s on %q: %v before, %v after", a, topic, access.Allows(gs, a, topic), access.Allows(ns, a, topic))
			}
		}
	})
}

// A prefix pattern covers exactly the names that start with its prefix; a name pattern
// exactly itself.
func TestMatchModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := patternGen.Draw(t, "p")
		topic := rapid.StringMatching(`[a-c.]{1,5}`).Draw(t, "topic")
		want := p == topic
		if last := len(p) - 1; p[last] == '*' {
			want = len(topic) >= last && topic[:last] == p[:last]
		}
		if access.Match(p, topic) != want {
			t.Fatalf("Match(%q, %q) = %v", p, topic, !want)
		}
	})
}

// Whatever the sequence of tries, failures and successes, a known username never gets
// more failed tries than its burst plus one per refill interval since the start.
func TestThrottleBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := access.ThrottleConfig{LoginBurst: rapid.IntRange(1, 5).Draw(t, "burst"), LoginRefillNs: 1000,
			UnknownBurst: 3, UnknownRefillNs: 500, TrackedMax: 4}
		th := access.NewThrottle(cfg)
		now, failures := int64(0), 0
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			now += rapid.Int64Range(0, 300).Draw(t, "dt")
			if th.Allow(now, "u", true) {
				th.Failed(now, "u", true)
				failures++
			}
			if failures > cfg.LoginBurst+int(now/cfg.LoginRefillNs) {
				t.Fatalf("%d failures by %d ns", failures, now)
			}
		}
	})
}
