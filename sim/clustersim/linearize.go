package clustersim

import "fmt"

// checkLinearizable runs porcupine over what the clients saw of each partition
// (invariants.PartitionHistory): deliveries and replays that read an offset, replays that
// found nothing, and high watermarks read from the partitions' stats.
func (u *run) checkLinearizable() {
	u.stats.LinOps = uint64(u.parts.Ops())
	if err := u.parts.Check(); err != nil {
		u.violate(fmt.Errorf("linearizability: %w", err))
	}
}
