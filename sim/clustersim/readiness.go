package clustersim

import "fmt"

// Readiness (API.md /readyz): a node process is ready only once its metastore replica
// has applied every entry committed when it started. The simulator knows a floor of that:
// the highest index any replica had applied when the process opened (an applied entry is
// committed). The first time a process answers ready, its replica must have applied up to
// the floor. A process that served requests (knew a leader) while still below the floor
// is where the rule bites: those are counted (ReadyBehind).

// noteStart records the floor of member mb's new process.
func (u *run) noteStart(mb *member) {
	mb.readyFloor, mb.ready, mb.servedBehind = u.appliedMax, false, false
}

// checkReadiness holds mb's first ready answer of its process to the floor.
func (u *run) checkReadiness(mb *member) {
	if !mb.up || mb.ready {
		return
	}
	applied := mb.n.MetastoreApplied()
	if mb.n.Readiness() != nil {
		if mb.n.IsReady() == nil && applied < mb.readyFloor {
			mb.servedBehind = true
		}
		return
	}
	mb.ready = true
	u.stats.ReadyChecks++
	if mb.servedBehind {
		u.stats.ReadyBehind++
	}
	if applied < mb.readyFloor {
		u.violate(fmt.Errorf("readiness: node %d answered ready with its metastore replica at index %d, below index %d applied in the cluster when it started", mb.id, applied, mb.readyFloor))
	}
}
