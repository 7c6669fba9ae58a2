package invariants

import (
	"strings"
	"testing"
)

func TestHistoryCheck(t *testing.T) {
	cases := []struct {
		name  string
		build func(h *History)
		bad   string // "" when the history is fine; else the message id the check names
	}{
		{"accepted, delivered, seen at the end", func(h *History) {
			h.Produce(1, 10, 20, Accepted)
			h.Deliver(1, 15, 30) // overlaps the produce: fine
			h.Deliver(1, 40, 50) // a duplicate: fine
			h.FinalRead(1, 100, true)
		}, ""},
		{"ambiguous, never seen", func(h *History) {
			h.Produce(2, 10, 20, Ambiguous)
			h.FinalRead(2, 100, false)
		}, ""},
		{"ambiguous, seen after", func(h *History) {
			h.Produce(3, 10, 20, Ambiguous)
			h.Deliver(3, 30, 40)
			h.FinalRead(3, 100, true)
		}, ""},
		{"refused, never seen", func(h *History) {
			h.Produce(4, 10, 20, Refused)
			h.FinalRead(4, 100, false)
		}, ""},
		{"accepted, lost", func(h *History) {
			h.Produce(5, 10, 20, Accepted)
			h.FinalRead(5, 100, false)
		}, "message 5"},
		{"refused, delivered", func(h *History) {
			h.Produce(6, 10, 20, Refused)
			h.Deliver(6, 30, 40)
			h.FinalRead(6, 100, true)
		}, "message 6"},
		{"delivered before it was sent", func(h *History) {
			h.Deliver(7, 1, 5)
			h.Produce(7, 10, 20, Accepted)
			h.FinalRead(7, 100, true)
		}, "message 7"},
		{"never produced, delivered", func(h *History) {
			h.Deliver(8, 1, 5)
			h.FinalRead(8, 100, true)
		}, "message 8"},
	}
	for _, c := range cases {
		h := NewHistory()
		h.Produce(100, 0, 1, Accepted) // a fine message beside each case
		h.FinalRead(100, 100, true)
		c.build(h)
		err := h.Check()
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad+":")):
			t.Errorf("%s: %v, want a violation naming %s", c.name, err, c.bad)
		}
	}
}
