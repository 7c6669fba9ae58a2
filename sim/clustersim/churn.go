package clustersim

import (
	"errors"

	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// Topic churn: in some seeds a second topic, churnTopic, is deleted and created again
// (a new incarnation each time) every ChurnGapNs while producers and consumers use it
// too. Its messages may be discarded (the dispatcher's stale-replica defense decides), so
// they are held to invariant 3 only: delivered bytes are bytes produced, and a definitely
// refused produce never appears; their 202s count as ambiguous for porcupine. The main
// topic keeps every check.

const churnTopic = "d"

// adminClient marks the requests of the churn, which belong to no client.
const adminClient = -1

// churnStep deletes the churn topic if it exists, else creates it, on a node that is up.
func (u *run) churnStep() {
	if u.healing {
		return
	}
	i, ok := u.upNode()
	if !ok {
		u.s.At(u.after(u.o.ChurnGapNs), event{kind: evChurn})
		return
	}
	u.stats.ChurnOps++
	if u.churnLive {
		u.record('D', uint64(i))
		u.submit(i, adminClient, reqChurn, nil, func(n *node.Node, now int64, tok uint64) { n.DeleteTopic(now, tok, churnTopic) })
		return
	}
	parts := u.o.Partitions
	u.record('N', uint64(i))
	u.submit(i, adminClient, reqChurn, nil, func(n *node.Node, now int64, tok uint64) {
		n.CreateTopic(now, tok, node.TopicSpec{Name: churnTopic, Partitions: &parts})
	})
}

// onChurned notes what the topic's state is after an answer, and schedules the next.
func (u *run) onChurned(resp node.Response) {
	switch {
	case resp.Err == nil:
		u.churnLive = !u.churnLive
	case errors.Is(resp.Err, node.ErrTopicExists):
		u.churnLive = true
	case errors.Is(resp.Err, node.ErrTopicNotFound):
		u.churnLive = false
	}
	u.s.At(u.after(u.o.ChurnGapNs), event{kind: evChurn})
}

// pickTopic draws the topic of a produce or consume.
func (u *run) pickTopic() string {
	if u.o.ChurnGapNs[1] > 0 && u.r.Chance(0.3) {
		return churnTopic
	}
	return topic
}

// churnOutcome is how porcupine sees a produce to the churn topic: a 202 there is not a
// promise of delivery (the incarnation may be deleted before its records move).
func churnOutcome(o invariants.Outcome) invariants.Outcome {
	if o == invariants.Accepted {
		return invariants.Ambiguous
	}
	return o
}
