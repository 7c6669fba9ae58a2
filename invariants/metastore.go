package invariants

import "fmt"

// MetaHistory checks invariant 6 over a run of several metastore replicas: at most one
// leader per term, and every replica that reports its state at a raft index reports the
// same term and the same state digest there (every replica applies the same sequence).
type MetaHistory struct {
	leaders map[uint64]uint64 // term -> leader
	applied map[uint64]metaAt // index -> the first report
}

type metaAt struct{ term, digest, by uint64 }

// NewMetaHistory returns an empty history.
func NewMetaHistory() *MetaHistory {
	return &MetaHistory{leaders: map[uint64]uint64{}, applied: map[uint64]metaAt{}}
}

// Leader notes that replica id leads term. It reports whether the term's leader is new,
// and an error when another replica led the same term.
func (h *MetaHistory) Leader(term, id uint64) (bool, error) {
	l, ok := h.leaders[term]
	switch {
	case !ok:
		h.leaders[term] = id
		return true, nil
	case l != id:
		return false, fmt.Errorf("two metastore leaders in term %d: replicas %d and %d", term, l, id)
	}
	return false, nil
}

// Applied notes that replica id's state is digest at index, reached in term.
func (h *MetaHistory) Applied(id, index, term, digest uint64) error {
	a, ok := h.applied[index]
	if !ok {
		h.applied[index] = metaAt{term: term, digest: digest, by: id}
		return nil
	}
	if a.term != term || a.digest != digest {
		return fmt.Errorf("metastore replicas diverge at index %d: replica %d has term %d state %016x, replica %d had term %d state %016x",
			index, id, term, digest, a.by, a.term, a.digest)
	}
	return nil
}
