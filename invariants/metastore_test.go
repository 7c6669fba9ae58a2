package invariants

import "testing"

// A second leader in a term, or another term or state at an applied index, is reported.
func TestMetaHistory(t *testing.T) {
	h := NewMetaHistory()
	if isNew, err := h.Leader(3, 1); !isNew || err != nil {
		t.Fatalf("first leader of term 3: %v %v", isNew, err)
	}
	if isNew, err := h.Leader(3, 1); isNew || err != nil {
		t.Fatalf("same leader again: %v %v", isNew, err)
	}
	if _, err := h.Leader(3, 2); err == nil {
		t.Fatalf("a second leader in term 3 was not reported")
	}
	if err := h.Applied(1, 10, 3, 0xabc); err != nil {
		t.Fatal(err)
	}
	if err := h.Applied(2, 10, 3, 0xabc); err != nil {
		t.Fatalf("the same state at the same index: %v", err)
	}
	if err := h.Applied(3, 10, 3, 0xdef); err == nil {
		t.Fatalf("another state at index 10 was not reported")
	}
	if err := h.Applied(3, 10, 4, 0xabc); err == nil {
		t.Fatalf("another term at index 10 was not reported")
	}
}
