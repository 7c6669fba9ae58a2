package clustersim

// Clock skew: in some seeds every machine's clock is off the simulated time by its own
// offset and runs fast or slow by its own rate (DESIGN.md section 4's nodes do not share
// a clock). A node only ever sees its own clock: every time given to it and every
// deadline it asks for are in its local time; the clients' history uses simulated time.

// clock is one machine's: local = t + offset + t*ppm/1e6.
type clock struct {
	offsetNs int64
	ppm      int64
}

// local is the machine's reading at simulated time t.
func (c clock) local(t int64) int64 { return t + c.offsetNs + t*c.ppm/1_000_000 }

// sim is the first simulated time at which the machine reads at least local.
func (c clock) sim(local int64) int64 {
	if local <= c.local(0) {
		return 0
	}
	t := (local - c.offsetNs) / (1_000_000 + c.ppm) * 1_000_000
	for c.local(t) < local {
		t += max(1, (local-c.local(t))/2)
	}
	for t > 0 && c.local(t-1) >= local {
		t--
	}
	return t
}

// nowOf is node mb's clock now.
func (u *run) nowOf(mb *member) int64 { return mb.clock.local(u.s.Now()) }
