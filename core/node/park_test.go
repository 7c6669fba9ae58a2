package node_test

import (
	"fmt"
	"testing"

	"github.com/narad/narad/core/node"
)

// Long polls parked on every partition of a topic stay listed once per partition however
// often records wake them: a woken poll that finds nothing (another took the record) is
// parked again without duplicating itself on the partitions that did not wake it. (A
// benchmark with 16 consumers on 6 partitions grew these lists to 600,000 entries and
// stalled the node for seconds.)
func TestParkedConsumesListedOncePerPartition(t *testing.T) {
	h := newHarness(t, nil)
	const parts, polls = 6, 16
	createTopic(t, h, "w", parts)
	for i := range polls {
		h.tok++
		h.n.Consume(h.now, h.tok, node.ConsumeRequest{Topic: "w", Partition: -1, Max: 1, WaitNs: node.ConsumeWaitMax})
		_ = i
	}
	h.settle()
	for i := range 24 {
		produce(t, h, "w", fmt.Sprint("m", i))
		h.advance(10_000_000)
		if got := h.n.Stats().ConsumesWaiting; got > parts*polls {
			t.Fatalf("after %d records: %d waiting entries for %d polls on %d partitions", i+1, got, polls, parts)
		}
	}
}
