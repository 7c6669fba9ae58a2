package walsim

type eventKind uint8

const (
	evOpDone eventKind = iota + 1
	evAppend
	evTick
	evCheckpoint
	evCrash
	evRestart
)

// event is one scheduled input. Epoch ties node events to one incarnation of the node:
// events of an earlier incarnation are dropped (a crash loses what was in flight).
type event struct {
	kind   eventKind
	epoch  uint64
	client int
	op     opRef
}
