//go:build !narad_mut_acksnotdurable

package lease

// mutAcksNotDurable is a deliberate bug for the simulator's mutation check (see the _on file).
const mutAcksNotDurable = false
