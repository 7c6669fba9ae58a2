package access

import "github.com/narad/narad/core/assert"

// ThrottleConfig bounds failed logins (API.md, "Access": 429).
type ThrottleConfig struct {
	LoginBurst    int   // failures of one known username before it is throttled
	LoginRefillNs int64 // one more try of that username per this long
	// UnknownBurst and UnknownRefillNs are the node-wide budget that every unknown
	// username shares.
	UnknownBurst    int
	UnknownRefillNs int64
	// TrackedMax bounds the known usernames with failures remembered; past it, a known
	// username's failures take from the node-wide budget too.
	TrackedMax int
}

// DefaultThrottleConfig is the rule: a burst of 5, then one try per 12 s, per
// username; unknown usernames share a burst of 50 and 10 tries per second.
func DefaultThrottleConfig() ThrottleConfig {
	return ThrottleConfig{LoginBurst: 5, LoginRefillNs: 12_000_000_000, UnknownBurst: 50,
		UnknownRefillNs: 100_000_000, TrackedMax: 100_000}
}

// bucket is a token bucket: tokens at atNs, one more per refillNs up to burst.
type bucket struct {
	tokens int
	atNs   int64
}

// refill brings b to nowNs. A clock that went back refills nothing and moves no mark.
func (b *bucket) refill(nowNs int64, burst int, refillNs int64) {
	if nowNs <= b.atNs || b.tokens >= burst {
		b.atNs = max(b.atNs, nowNs)
		return
	}
	n := (nowNs - b.atNs) / refillNs
	if n >= int64(burst-b.tokens) {
		b.tokens, b.atNs = burst, nowNs
		return
	}
	b.tokens += int(n)
	b.atNs += n * refillNs
}

// Throttle counts failed logins per known username and node-wide for unknown ones.
type Throttle struct {
	cfg     ThrottleConfig
	users   map[string]*bucket
	unknown bucket
}

// NewThrottle returns a throttle with every budget full.
func NewThrottle(cfg ThrottleConfig) *Throttle {
	assert.That(
		cfg.LoginBurst > 0 && cfg.LoginRefillNs > 0 && cfg.UnknownBurst > 0 && cfg.UnknownRefillNs > 0 &&
			cfg.TrackedMax > 0,
		"access: throttle config without a budget",
	)
	return &Throttle{cfg: cfg, users: map[string]*bucket{}, unknown: bucket{tokens: cfg.UnknownBurst}}
}

// budget is the bucket a username's failures take from, refilled to nowNs, and its
// burst; nil when a known username is not tracked and the tracked set is full.
func (t *Throttle) budget(nowNs int64, name string, known bool) (*bucket, int) {
	if known {
		b := t.users[name]
		if b == nil && len(t.users) < t.cfg.TrackedMax {
			b = &bucket{tokens: t.cfg.LoginBurst, atNs: nowNs}
			t.users[name] = b
		}
		if b != nil {
			b.refill(nowNs, t.cfg.LoginBurst, t.cfg.LoginRefillNs)
			return b, t.cfg.LoginBurst
		}
	}
	t.unknown.refill(nowNs, t.cfg.UnknownBurst, t.cfg.UnknownRefillNs)
	return &t.unknown, t.cfg.UnknownBurst
}

// Allow reports whether a password check of name may run now: its budget has a try left.
// known says whether the replica holds the username.
func (t *Throttle) Allow(nowNs int64, name string, known bool) bool {
	b, burst := t.budget(nowNs, name, known)
	t.forgetFull(name, b, burst)
	return b.tokens > 0
}

// Failed spends a try of name's budget (none is left to spend after Allow said no).
func (t *Throttle) Failed(nowNs int64, name string, known bool) {
	b, _ := t.budget(nowNs, name, known)
	if b.tokens > 0 {
		b.tokens--
	}
}

// Succeeded clears name's failures.
func (t *Throttle) Succeeded(name string) { delete(t.users, name) }

// forgetFull drops a known username's bucket once it is full again: it holds nothing a
// new one would not.
func (t *Throttle) forgetFull(name string, b *bucket, burst int) {
	if b != &t.unknown && b.tokens >= burst {
		delete(t.users, name)
	}
}

// Tracked is the number of known usernames whose failures are remembered.
func (t *Throttle) Tracked() int { return len(t.users) }
