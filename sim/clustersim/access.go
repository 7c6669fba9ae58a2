package clustersim

import (
	"fmt"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/wire"
)

// The owner's side of the access checks (users.go): the simulator sees every routed
// consume and ack made for a user arrive at its owner (accessArrived, before the owner
// takes it) and every answer leave (accessAnswered), so it holds the answer to what the
// owner's replica said of the user's consume grant at the request's arrival, which is
// when the owner checks it.

// accessArrived notes a routed request made for a user, as node mb's replica judges it
// now; a copy of one already noted in this process is not (the owner serves the first).
func (u *run) accessArrived(mb *member, from uint64, body []byte) {
	if !u.o.Users || len(body) < 2 {
		return
	}
	if k := wire.Kind(body[1]); k != wire.KindConsumeRequestAs && k != wire.KindAckRequestAs {
		return
	}
	m, err := wire.Decode(body)
	if err != nil {
		return
	}
	var key routedKey
	var req routedReq
	switch m := m.(type) {
	case wire.ConsumeRequest:
		key, req = routedKey{epoch: mb.epoch, from: from, id: m.ID}, routedReq{actor: m.Actor, topic: m.Topic}
	case wire.AckRequest:
		key, req = routedKey{epoch: mb.epoch, from: from, ack: true, id: m.ID}, routedReq{actor: m.Actor, topic: m.Topic}
	default:
		return
	}
	if _, seen := u.acc.routed[key]; seen {
		return
	}
	u.syncUsers(mb)
	req.granted = u.replicaAllows(mb, req.actor, access.Consume, req.topic)
	u.acc.routed[key] = req
}

// accessAnswered checks node mb's answer to a routed request made for a user: served
// only if its replica granted it at the request's arrival, refused 403 only if not.
func (u *run) accessAnswered(mb *member, to uint64, body []byte) {
	if !u.o.Users || len(body) < 2 {
		return
	}
	if k := wire.Kind(body[1]); k != wire.KindConsumeResponse && k != wire.KindConsumeResponseTopic && k != wire.KindAckResponse {
		return
	}
	m, err := wire.Decode(body)
	if err != nil {
		return
	}
	var key routedKey
	var st wire.Status
	switch m := m.(type) {
	case wire.ConsumeResponse:
		key, st = routedKey{epoch: mb.epoch, from: to, id: m.ID}, m.Status
	case wire.AckResponse:
		key, st = routedKey{epoch: mb.epoch, from: to, ack: true, id: m.ID}, m.Status
	default:
		return
	}
	req, ok := u.acc.routed[key]
	if !ok {
		return // made for the system
	}
	delete(u.acc.routed, key)
	what := map[bool]string{false: "consume", true: "ack"}[key.ack]
	switch {
	case st == wire.StatusOK && !req.granted:
		u.violate(fmt.Errorf("access: node %d served a routed %s of user %q on %q that its replica did not grant when the request arrived", mb.id, what, req.actor, req.topic))
	case st == wire.StatusForbidden && req.granted:
		u.violate(fmt.Errorf("access: node %d refused (403) a routed %s of user %q on %q that its replica granted when the request arrived", mb.id, what, req.actor, req.topic))
	case st == wire.StatusOK:
		u.stats.OwnerChecks++
	case st == wire.StatusForbidden:
		u.stats.OwnerForbidden++
	}
}
