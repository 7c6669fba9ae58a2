package node

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestInflightTable (rapid): ids are fresh and tagged, an entry is taken once and only
// as what it was filed for, ids list entries in filing order, and a peer's wire id names
// an entry only for the peer it was sent to and only in the process that sent it.
func TestInflightTable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tab := newInflightTable()
		tab.peerBase = rapid.Uint64Range(1, 1<<60).Draw(t, "base")
		filed := map[uint64]entry{}
		var order []uint64
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			if len(order) == 0 || rapid.Bool().Draw(t, "add") {
				e := entry{purpose: purpose(rapid.IntRange(1, int(purposeEnd)-1).Draw(t, "purpose")),
					peer:     rapid.Uint64Range(1, 3).Draw(t, "peer"),
					deadline: rapid.Int64Range(1, 100).Draw(t, "deadline")}
				id := tab.add(e)
				if id&idTag == 0 || filed[id].purpose != 0 {
					t.Fatalf("id %x is not fresh and tagged", id)
				}
				filed[id] = e
				order = append(order, id)
				continue
			}
			id := order[rapid.IntRange(0, len(order)-1).Draw(t, "which")]
			want, live := filed[id]
			w := tab.wireID(id)
			if got, ok := tab.peerEntry(w, want.purpose, want.peer); live && (!ok || got != id) {
				t.Fatalf("wire id %x does not name its entry %x", w, id)
			}
			if _, ok := tab.peerEntry(w, want.purpose, want.peer+1); ok {
				t.Fatalf("wire id %x names an entry of another peer", w)
			}
			other := tab
			other.peerBase += 1 << 40
			if _, ok := other.peerEntry(w, want.purpose, want.peer); ok {
				t.Fatalf("wire id %x names an entry in a process with another base", w)
			}
			e, ok := tab.take(id, want.purpose)
			if ok != live || (ok && (e.purpose != want.purpose || e.peer != want.peer)) {
				t.Fatalf("take %x: %v %v, filed %v %v", id, e, ok, want, live)
			}
			delete(filed, id)
		}
		checkIndexes(t, &tab, order, filed)
	})
}

// checkIndexes: the scans by purpose see exactly the live entries of their purpose, in
// filing order, and the earliest deadline is the earliest of the live calls.
func checkIndexes(t *rapid.T, tab *inflightTable, order []uint64, filed map[uint64]entry) {
	var timed []uint64
	var at int64
	for p := purpose(1); p < purposeEnd; p++ {
		var live []uint64
		for _, id := range order {
			if filed[id].purpose == p {
				live = append(live, id)
			}
		}
		if got := tab.ids(p, nil); !slices.Equal(got, live) {
			t.Fatalf("ids(%d) = %x, filed in order %x", p, got, live)
		}
	}
	for _, id := range order {
		e := filed[id]
		if e.purpose == forCall || e.purpose == forRemoteCommit {
			timed = append(timed, id)
		}
		if e.purpose == forCall && (at == 0 || e.deadline < at) {
			at = e.deadline
		}
	}
	if got := tab.timedIDs(); !slices.Equal(got, timed) {
		t.Fatalf("timedIDs = %x, filed in order %x", got, timed)
	}
	if got, ok := tab.nextDeadline(); got != at || ok != (at != 0) {
		t.Fatalf("nextDeadline = %d %v, the earliest call's is %d", got, ok, at)
	}
}

// TestTakeAsAnotherPurposePanics: an answer routed to an entry of another purpose is a
// programmer error, stated through core/assert.
func TestTakeAsAnotherPurposePanics(t *testing.T) {
	tab := newInflightTable()
	id := tab.add(entry{purpose: forRead})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "another purpose") {
			t.Fatalf("recovered %v", r)
		}
	}()
	tab.take(id, forCommit)
}
