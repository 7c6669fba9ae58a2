package walsim

import (
	"fmt"

	"github.com/narad/narad/core/wal"
)

// healEventsMax bounds the heal phase: a WAL that cannot settle within it is a liveness
// failure.
const healEventsMax = 200_000

// heal stops faults and new work, lets everything in flight finish, crashes one last
// time, recovers, and requires one more append to be acknowledged.
func (u *run) heal() {
	u.healing = true
	u.d.SetFaults(false)
	u.record('h')
	if !u.settle() {
		return
	}
	u.crash()
	u.d.FreeFull() // the operator frees a device still full: the final append must fit
	u.start()
	if !u.settle() {
		return
	}
	if !u.ready {
		u.violate(fmt.Errorf("liveness: the WAL did not recover after healing"))
		return
	}
	m := &u.model
	m.nextToken++
	tok := m.nextToken
	seq := u.log.NextSeq()
	m.pending[tok] = pendingAppend{client: -1, seq: seq, payload: []byte("final")}
	m.appended[seq] = append(m.appended[seq], []byte("final"))
	u.log.Append(u.s.Now(), tok, wal.Record{Topic: "sim", Payload: []byte("final")})
	u.drain()
	if !u.settle() {
		return
	}
	if _, ok := m.acked[seq]; !ok {
		u.violate(fmt.Errorf("liveness: an append after healing was not acknowledged"))
	}
}

// settle processes events until the queue is empty, the bound is hit, or a violation.
func (u *run) settle() bool {
	for n := 0; u.err == nil; n++ {
		if n == healEventsMax {
			u.violate(fmt.Errorf("liveness: still busy after %d events of the heal phase", healEventsMax))
			return false
		}
		e, ok := u.s.Next()
		if !ok {
			return true
		}
		u.handle(e)
	}
	return false
}
