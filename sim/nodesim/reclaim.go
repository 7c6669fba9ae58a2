package nodesim

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/invariants"
)

// A doomed topic (issue 13, point 6). In half the seeds (Options.DoomAtNs) the simulator
// creates a topic of two partitions, doomedTopic, produces a record to each, waits until
// both are committed (their partition directories exist), and deletes it, while the
// faults go on; each step is retried until answered. Its records carry no message id:
// no client reads them and no check counts them. Checked (check name "reclaim"):
//   - a directory removed under "parts" or "acks" is never of a clients' topic;
//   - after the heal, within ReclaimBoundNs, the node keeps no directory of an
//     incarnation its replica deleted (invariants.ReclaimBoundNs).

const (
	doomedTopic   = "doomed"
	doomRetryNs   = 10_000_000
	doomWaitsMax  = 300 // stats reads waiting for the two commits, then the delete goes anyway
	doomedRecords = 2
)

// Steps of the doomed topic.
const (
	doomCreate = iota
	doomProduce
	doomWait
	doomDelete
	doomDone
)

type doomState struct {
	step     int
	produced int // records answered 202
	waits    int
	pending  bool
}

// doomNext sends the doomed topic's next request, if none is waiting.
func (u *run) doomNext() {
	ds := &u.doom
	if ds.step == doomDone || ds.pending {
		return
	}
	if !u.up || u.n.IsReady() != nil {
		u.s.At(u.s.Now()+doomRetryNs, event{kind: evDoom})
		return
	}
	ds.pending = true
	req := request{client: -1, kind: reqDoom, part: -1}
	switch ds.step {
	case doomCreate:
		parts := uint32(doomedRecords)
		u.submit(req, func(now int64, tok uint64) {
			u.n.CreateTopic(now, tok, node.TopicSpec{Name: doomedTopic, Partitions: &parts})
		})
	case doomProduce:
		msgs := []node.ProduceMessage{{Partition: int64(ds.produced), Payload: []byte("doomed")}}
		u.submit(req, func(now int64, tok uint64) { u.n.Produce(now, tok, doomedTopic, msgs) })
	case doomWait:
		u.submit(req, func(now int64, tok uint64) { u.n.GetTopic(now, tok, doomedTopic) })
	case doomDelete:
		u.submit(req, func(now int64, tok uint64) { u.n.DeleteTopic(now, tok, doomedTopic) })
	}
}

// onDoom advances the doomed topic on an answer, and asks again after doomRetryNs.
func (u *run) onDoom(resp node.Response) {
	ds := &u.doom
	ds.pending = false
	u.record('X', uint64(ds.step), boolBit(resp.Err != nil))
	switch ds.step {
	case doomCreate:
		if resp.Err == nil || errors.Is(resp.Err, node.ErrTopicExists) {
			ds.step = doomProduce
		}
	case doomProduce:
		if resp.Err == nil {
			if ds.produced++; ds.produced == doomedRecords {
				ds.step = doomWait
			}
		}
	case doomWait:
		committed := 0
		for _, ps := range resp.Stats {
			if ps.HighWatermark > 0 {
				committed++
			}
		}
		if ds.waits++; committed == doomedRecords || ds.waits >= doomWaitsMax {
			ds.step = doomDelete
		}
	case doomDelete:
		if resp.Err == nil || errors.Is(resp.Err, node.ErrTopicNotFound) {
			ds.step = doomDone
			u.stats.DoomedDeletes++
			return
		}
	}
	u.s.At(u.s.Now()+doomRetryNs, event{kind: evDoom})
}

// onDoomLost: the process died with the doomed topic's request unanswered.
func (u *run) onDoomLost() {
	u.doom.pending = false
	u.s.At(u.s.Now()+u.o.RestartNs+doomRetryNs, event{kind: evDoom})
}

// checkRemoval: a directory the node removes is never of a clients' topic.
func (u *run) checkRemoval(op disk.Op) {
	id, ok := invariants.IncarnationOf(op.Name)
	if op.Kind != disk.KindRemoveDir || !ok {
		return
	}
	u.stats.ReclaimChecks++
	for _, t := range u.topics {
		if t.id == id {
			u.violate(fmt.Errorf("reclaim: the node removed %s of topic %s (incarnation %d), never deleted", op.Name, t.name, id))
			return
		}
	}
}

// awaitReclaimed runs the healed node until it keeps no directory of an incarnation its
// replica deleted, for at most invariants.ReclaimBoundNs.
func (u *run) awaitReclaimed() {
	left := func() ([]string, bool) {
		if !u.up {
			return nil, false
		}
		return invariants.LeftDirs(u.d, u.n.IncarnationDeleted), true
	}
	if err := invariants.AwaitReclaimed(u.s.Now, u.healStep, left); err != nil {
		u.violate(err)
	}
}

// healStep runs the healed node's next event: false when none is left or the run failed.
func (u *run) healStep() bool {
	e, ok := u.s.Next()
	if ok && u.err == nil {
		u.handle(e)
	}
	return ok && u.err == nil
}
