package clustersim

// Clock skew: in some seeds every machine's clock is off the simulated time by its own
// offset and runs fast or slow by its own rate (DESIGN.md section 4's nodes do not share
// a clock), and in some seeds clocks step forward and back while the cluster works. A
// node only ever sees its own clock: every time given to it and every deadline it asks
// for are in its local time; the clients' history uses simulated time.

// nowOf is node mb's clock now.
func (u *run) nowOf(mb *member) int64 { return mb.clock.Local(u.s.Now()) }

// clockStep is one step of a node's clock.
type clockStep struct {
	atNs, byNs int64
}

// clockStep steps a random node's clock forward or back by up to StepNs (never below
// its offset's zero: a clock reading 0 means unset to the core), then lets the node
// reschedule its deadlines on the new reading.
func (u *run) clockStep() {
	if u.healing {
		return
	}
	i := u.r.Intn(len(u.members))
	mb := u.members[i]
	by := int64(u.r.Range(1, int(u.o.StepNs))) * []int64{-1, 1}[u.r.Intn(2)]
	by = max(by, -(mb.clock.OffsetNs + mb.clock.StepNs))
	mb.clock.StepNs += by
	u.stats.ClockSteps++
	u.steps = append(u.steps, clockStep{atNs: u.s.Now(), byNs: by})
	u.record('k', uint64(i), uint64(by))
	if mb.up {
		u.drain(i)
	}
	u.s.At(u.after(u.o.StepGapNs), event{kind: evStep})
}

// stepsBetween is the size of every clock step made in [from, to], either way.
func (u *run) stepsBetween(fromNs, toNs int64) int64 {
	sum := int64(0)
	for _, s := range u.steps {
		if s.atNs >= fromNs && s.atNs <= toNs {
			sum += max(s.byNs, -s.byNs)
		}
	}
	return sum
}
