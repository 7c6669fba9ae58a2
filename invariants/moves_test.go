package invariants

import "testing"

func TestMovesChainAndRespectTime(t *testing.T) {
	m := NewMoves()
	m.Add(PartRef{TopicID: 1, Index: 0}, 1, 100)
	m.Add(PartRef{TopicID: 1, Index: 1}, 2, 200)
	m.Add(PartRef{TopicID: 2, Index: 0}, 3, 100)
	switch {
	case !m.LeadTo(1, 0, 2, 50):
		t.Fatal("0 -> 1 -> 2 after 50")
	case m.LeadTo(1, 0, 2, 150):
		t.Fatal("the move off 0 came before 150")
	case m.LeadTo(1, 0, 3, 0):
		t.Fatal("incarnation 2's move does not count for 1")
	case m.LeadTo(1, 2, 0, 0):
		t.Fatal("moves have a direction")
	}
}
