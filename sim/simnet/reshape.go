package simnet

import "github.com/narad/narad/core/rng"

// The shapes Reshape draws.
const (
	ShapeHealed   byte = 'h' // every link restored
	ShapeIsolated byte = 'i' // node A cut from every other node, both ways
	ShapePair     byte = 'p' // A and B cut from each other, both ways
	ShapeOneWay   byte = 'w' // A's messages to B lost, B's to A delivered
)

// Reshape heals every link and draws the next network shape among ids (r is the
// simulation's stream): healed, one node isolated, a pair cut both ways, or a one-way
// cut. It returns the shape and the nodes it names (A and B may be equal: nothing cut).
func (n *Net[M]) Reshape(r *rng.Rand, ids []uint64) (shape byte, a, b uint64) {
	n.Heal()
	a, b = ids[r.Intn(len(ids))], ids[r.Intn(len(ids))]
	switch r.Intn(4) {
	case 1:
		for _, id := range ids {
			if id != a {
				n.Partition(a, id)
			}
		}
		return ShapeIsolated, a, b
	case 2:
		n.Partition(a, b)
		return ShapePair, a, b
	case 3:
		n.Cut(a, b)
		return ShapeOneWay, a, b
	}
	return ShapeHealed, a, b
}
