package clustersim

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/node"
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
	u.churn.ops = append(u.churn.ops, churnOp{create: !u.churnLive, sentNs: u.s.Now()})
	if u.churnLive {
		u.record('D', uint64(i))
		u.submit(i, adminClient, reqChurn, nil, func(n *node.Node, now int64, tok uint64) { n.DeleteTopic(now, tok, churnTopic) })
		return
	}
	u.record('N', uint64(i))
	u.submit(i, adminClient, reqChurn, nil, func(n *node.Node, now int64, tok uint64) {
		n.CreateTopic(now, tok, u.topicSpec(churnTopic))
	})
}

// churnDeleteSent reports whether a delete of the churn topic was sent in [fromNs, toNs].
func (u *run) churnDeleteSent(fromNs, toNs int64) bool {
	for _, op := range u.churn.ops {
		if !op.create && op.sentNs >= fromNs && op.sentNs <= toNs {
			return true
		}
	}
	return false
}

// onChurned notes what the topic's state is after an answer, and schedules the next.
func (u *run) onChurned(resp node.Response) {
	op := &u.churn.ops[len(u.churn.ops)-1]
	op.answerNs, op.ok = u.s.Now(), resp.Err == nil
	if op.create && resp.Err == nil {
		u.churn.createdAt[resp.Topic.ID] = op.sentNs
		u.churn.observed(resp.Topic.ID, u.s.Now())
	}
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

// churnOp is one delete or create of the churn topic as the admin saw it.
type churnOp struct {
	create           bool
	sentNs, answerNs int64
	ok               bool // answered done (a lost or failed answer leaves the outcome open)
}

// incarnations is what the admin learnt of the churn topic's incarnations: when each
// create it was told the id of was sent, when an incarnation was first known to exist,
// and every delete and create in order (one at a time).
type incarnations struct {
	ops       []churnOp
	createdAt map[uint64]int64 // id -> its create was sent then
	existedAt map[uint64]int64 // id -> known to exist by then (answered or observed)
}

func newIncarnations() incarnations {
	return incarnations{createdAt: map[uint64]int64{}, existedAt: map[uint64]int64{}}
}

// observed notes that incarnation id existed at atNs.
func (c *incarnations) observed(id uint64, atNs int64) {
	if at, ok := c.existedAt[id]; !ok || atNs < at {
		c.existedAt[id] = atNs
	}
}

// check: a message whose produce flew from callNs to endNs may come from incarnation id
// only if id's create was sent by endNs: a record never lands in an incarnation created
// after its produce was answered (the incarnation check at commit). The create of an
// incarnation whose id no answer told is not known, and passes. The other bound (not
// from an incarnation whose delete was answered before the produce was sent) does not
// hold by design: a node resolves a topic on its own replica, which may lag the delete.
func (c *incarnations) check(id uint64, _, endNs, nowNs int64) error {
	c.observed(id, nowNs)
	if at, ok := c.createdAt[id]; ok && at > endNs {
		return fmt.Errorf("from incarnation %d of %q, whose create was sent at %d ns, after its produce was answered at %d ns", id, churnTopic, at, endNs)
	}
	return nil
}
