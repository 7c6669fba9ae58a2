package plog

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// Config holds the log's tunables. Zero fields take the defaults below.
type Config struct {
	Dir               string // directory of the segments, e.g. "parts/000000000000002a-3"
	SegmentBytesMax   int64  // roll to a new segment at the next commit once the active one is past it
	RetentionMs       int64  // remove non-active segments whose newest commit is older; 0: forever
	ReadRetriesMax    int    // re-reads of a frame that fails its CRC or its read
	RecoveryReadBytes int    // bytes per recovery read; a larger frame is read whole
	PreallocBytes     int64  // zeros written ahead of the frames (prealloc.go); < 0: none

	ReadCacheBatchesMax int // verified batches kept in memory for reads (doc.go, The read cache)
	ReadCacheBytesMax   int // and their bytes: frames plus decoded entries

	// VerifiedEnd, when HasVerifiedEnd, is the high-watermark of an earlier machine of
	// this log in the same process (a failed partition's reopen): every frame at or past
	// it is of a commit that was answered failed, and recovery cuts it, so that the
	// reopened log serves its verified prefix only (the records were sent again).
	VerifiedEnd    uint64
	HasVerifiedEnd bool

	// BaseOffset is the first offset of a log that holds no segment yet: a partition
	// given to a new owner under a new epoch (core/meta forget.go) starts past every
	// offset of the copy it replaces, so no offset ever names two records. A log with
	// segments takes its offsets from them.
	BaseOffset uint64
}

// Defaults.
const (
	DefaultSegmentBytesMax   = 64 << 20
	DefaultReadRetriesMax    = 8
	DefaultRecoveryReadBytes = 1 << 20
	DefaultPreallocBytes     = 256 << 10
	// DefaultReadCacheBatchesMax and DefaultReadCacheBytesMax bound the read cache of one
	// partition log. Consumers mostly read the newest records, up to 100 per consume
	// (node.ConsumeMax). The dispatcher aims at about 64 records per partition commit,
	// so 64 batches hold the last ~4,000 records: a consumer that is a few consumes behind
	// the producers still reads from memory. 8 MiB holds 128 frames of 64 KiB (64 records
	// of 1 KiB), so with ordinary payloads the batch bound is the one that binds; the byte
	// bound caps what large payloads can take. The cost is per partition log: a node
	// holding P partitions keeps at most P × 8 MiB. A batch larger than the byte bound is
	// never cached (every read of it goes to the disk).
	DefaultReadCacheBatchesMax = 64
	DefaultReadCacheBytesMax   = 8 << 20
	// ReadsInFlightMax bounds the reads waiting for the disk (a read answered from the
	// cache never waits); more are answered ErrBusy.
	ReadsInFlightMax = 4096
	// recoveryReadBytesMin lets a read hold a frame header and a batch header, which the
	// scan and the search need to make progress.
	recoveryReadBytesMin = 64
)

func (c Config) withDefaults() Config {
	assert.That(c.Dir != "", "plog: Config.Dir is required")
	if c.SegmentBytesMax <= 0 {
		c.SegmentBytesMax = DefaultSegmentBytesMax
	}
	if c.RetentionMs < 0 {
		c.RetentionMs = 0
	}
	if c.ReadRetriesMax <= 0 {
		c.ReadRetriesMax = DefaultReadRetriesMax
	}
	if c.RecoveryReadBytes <= 0 {
		c.RecoveryReadBytes = DefaultRecoveryReadBytes
	}
	c.RecoveryReadBytes = max(c.RecoveryReadBytes, recoveryReadBytesMin)
	if c.PreallocBytes == 0 {
		c.PreallocBytes = DefaultPreallocBytes
	}
	if c.ReadCacheBatchesMax <= 0 {
		c.ReadCacheBatchesMax = DefaultReadCacheBatchesMax
	}
	if c.ReadCacheBytesMax <= 0 {
		c.ReadCacheBytesMax = DefaultReadCacheBytesMax
	}
	return c
}

// Errors a commit or a read can be answered with. Commit limits are ErrEmpty and
// ErrTooLarge (frame.go).
var (
	// ErrRetry: the commit's write failed or its read-back did not match; the segment was
	// cut back and synced, nothing of the commit is visible, and a retry lands at the same
	// offsets.
	ErrRetry = errors.New("plog: commit not durable, retry")
	// ErrFailed: an fdatasync failed (or recovery did); the log refuses commits until it is
	// reopened. A commit answered with it may or may not reappear after the reopen.
	ErrFailed = errors.New("plog: failed")
	// ErrRemoved: the offset is below OldestOffset; retention removed it (HTTP 410).
	ErrRemoved = errors.New("plog: offset removed by retention")
	// ErrCorrupt: the bytes holding the offset failed their CRC (or their read) on every
	// one of ReadRetriesMax+1 reads, or recovery found them damaged. They are never served.
	ErrCorrupt = errors.New("plog: record unreadable")
	// ErrNotReady: recovery has not finished.
	ErrNotReady = errors.New("plog: not ready")
	// ErrBusy: ReadsInFlightMax reads are already waiting for the disk.
	ErrBusy = errors.New("plog: too many reads in flight")
)

// CommitDone answers one Commit. Err is nil exactly when the batch is durable, read back
// intact and visible: offsets BaseOffset to BaseOffset+Count-1 hold its entries.
type CommitDone struct {
	Token      uint64
	BaseOffset uint64
	Count      int
	Err        error
}

// Stored is one record as the log serves it.
type Stored struct {
	Offset       uint64
	Key          []byte
	HasKey       bool
	Payload      []byte
	CommitTimeMs int64
}

// ReadDone answers one Read. Records holds up to the requested number of records
// starting at the requested offset, all from one batch; it is empty at or past the
// high-watermark. The Key and Payload slices are copies made for this answer (one buffer
// per answer) and belong to the caller, who may keep or write them: they alias neither
// the read cache nor any other answer.
type ReadDone struct {
	Token   uint64
	Records []Stored
	Err     error
}

// Recovery is reported once, when Open finishes.
type Recovery struct {
	HighWatermark uint64   // next offset to be made visible
	OldestOffset  uint64   // first offset still stored
	Decisions     []string // the recovery table rows taken, in order (for logs and tests)
	Holes         int      // ranges of offsets found damaged; reads of them get ErrCorrupt
}

// Ready is the output of the machine since the last call to Ready.
//
// Order: every Op may be issued at once, in any order; the machine has already waited for
// whatever an op depends on (a write for its segment's directory entry, a sync for its
// write, a read-back for its sync). Every CommitDone may be delivered at once: a nil Err
// means the batch is durable and verified. Recovered is set once. Failed is set once,
// after the log turned failed and cut back what it cannot trust: the node may restart.
type Ready struct {
	Ops       []disk.Op
	Commits   []CommitDone
	Reads     []ReadDone
	Recovered *Recovery
	Failed    error
}

// Stats counts what the log did since New.
type Stats struct {
	Commits         uint64 // commits answered durable
	Records         uint64 // entries they held
	BytesCommitted  uint64 // frame bytes they wrote
	CommitRetries   uint64 // commits answered ErrRetry
	ReadBackBad     uint64 // read-backs that did not match what was written
	Reads           uint64 // reads answered
	ReadRetries     uint64 // re-reads after a CRC mismatch or a read error
	ReadsCorrupt    uint64 // reads answered ErrCorrupt
	ReadCacheHits   uint64 // reads answered from the read cache, with no disk op
	ReadCacheMisses uint64 // reads of a stored batch that was not cached (they wait for the disk)
	ReadsJoined     uint64 // misses that joined a fetch of the same batch already in flight
	SegmentsRolled  uint64 // segments created for commits
	SegmentsRemoved uint64 // segments removed by retention
}

type opPurpose uint8

const (
	purposeRecover opPurpose = iota + 1
	purposeCommit
	purposeRead
	purposeRetain
	purposeTrim     // cutting the zeros of a segment a roll left (prealloc.go)
	purposeDetached // mutation hwbeforesync: a sync whose outcome nobody waits for
)

type state uint8

const (
	stateNew state = iota
	stateRecovering
	stateReady
	stateFailed // recovery failed: nothing is served
)

// batchRef locates one batch on disk: the in-memory index, one per frame.
type batchRef struct {
	base  uint64
	count uint32
	size  uint32 // frame bytes
	pos   int64  // file offset of the frame
}

type segment struct {
	name     string
	base     uint64     // from the name: the first offset it may hold
	size     int64      // bytes in the file: for the active segment, where the next frame goes
	newestMs int64      // commit time of its newest batch; 0 when it holds none
	batches  []batchRef // in offset order; offsets between batches are holes
	zeroEnd  int64      // end of the zeros this process wrote past size (prealloc.go); 0: none
}

// Log is the partition log: a deterministic state machine. See doc.go for how it is
// driven and what it promises.
type Log struct {
	cfg          Config
	state        state
	poisoned     error // sticky: set by a failed fdatasync, refuses commits until reopened
	failReported bool
	out          Ready

	nextOpID uint64
	ops      map[uint64]opPurpose // ops in flight and what they are for
	trims    map[uint64]string    // the trims' truncates in flight, by op: their segments

	fetches      map[uint64]*fetch // read op in flight -> the fetch it serves
	fetching     map[uint64]*fetch // batch base offset -> its fetch in flight, at most one
	readsWaiting int               // reads waiting for a fetch: at most ReadsInFlightMax
	cache        readCache         // verified batches (cache.go)

	segs   []segment // oldest first; the last is the active one
	hw     uint64    // high-watermark: next offset to be made visible
	oldest uint64    // first offset still stored

	commit   *inflightCommit // nil when no commit is in flight
	removing bool            // a retention removal is in flight

	stats Stats
	rec   *recovery
}

// New returns a log that does nothing until Open.
func New(cfg Config) *Log {
	cfg = cfg.withDefaults()
	return &Log{
		cfg:      cfg,
		ops:      map[uint64]opPurpose{},
		trims:    map[uint64]string{},
		fetches:  map[uint64]*fetch{},
		fetching: map[uint64]*fetch{},
		cache:    newReadCache(cfg.ReadCacheBatchesMax, cfg.ReadCacheBytesMax),
	}
}

// Ready returns the actions produced since the last call and clears them.
func (l *Log) Ready() Ready {
	r := l.out
	l.out = Ready{}
	return r
}

// HighWatermark is the next offset to be made visible: every offset below it is durable
// and verified (or a recovered hole) and may be read.
func (l *Log) HighWatermark() uint64 { return l.hw }

// OldestOffset is the first offset still stored; reads below it get ErrRemoved.
func (l *Log) OldestOffset() uint64 { return l.oldest }

// SizeBytes is the size of every segment file.
func (l *Log) SizeBytes() int64 {
	var n int64
	for i := range l.segs {
		n += l.segs[i].size
	}
	return n
}

// Failed returns why the log refuses commits (a failed fdatasync or recovery), or nil.
func (l *Log) Failed() error { return l.poisoned }

// Stats returns the counters.
func (l *Log) Stats() Stats { return l.stats }

// ReadCacheSize is how many batches the read cache holds and the bytes charged for them;
// never more than Config.ReadCacheBatchesMax and Config.ReadCacheBytesMax.
func (l *Log) ReadCacheSize() (batches, bytes int) { return len(l.cache.byBase), l.cache.bytes }

// DiskDone feeds the completion of an op this machine issued.
func (l *Log) DiskDone(nowNs int64, res disk.Result) {
	purpose, ok := l.ops[res.ID]
	assert.That(ok, "plog: completion of an unknown op")
	delete(l.ops, res.ID)
	if l.state == stateFailed {
		return // recovery failed: nothing issued before can change an answer
	}
	switch purpose {
	case purposeRecover:
		l.recoverStep(res)
	case purposeCommit:
		l.commitStep(res)
	case purposeRead:
		l.readStep(res)
	case purposeRetain:
		l.retainStep(nowNs, res)
	case purposeTrim:
		l.trimStep(res)
	case purposeDetached:
	}
}

func (l *Log) issue(p opPurpose, op disk.Op) uint64 {
	l.nextOpID++
	op.ID = l.nextOpID
	l.ops[op.ID] = p
	l.out.Ops = append(l.out.Ops, op)
	return op.ID
}

func (l *Log) active() *segment { return &l.segs[len(l.segs)-1] }

func segmentName(dir string, base uint64) string {
	return fmt.Sprintf("%s/%016x.log", dir, base)
}

// poison turns the log failed for commits. Reads go on: every byte below the
// high-watermark was verified after a successful fdatasync and stays where it is.
// Failed is reported by the caller once the untrusted tail is cut (see cutDone).
func (l *Log) poison(cause error) {
	if l.poisoned == nil {
		l.poisoned = fmt.Errorf("%w: %v", ErrFailed, cause)
	}
}

// reportFailed publishes the failure in Ready, once.
func (l *Log) reportFailed() {
	if !l.failReported {
		l.failReported = true
		l.out.Failed = l.poisoned
	}
}

// failRecovery stops the log: recovery could not establish what is on disk.
func (l *Log) failRecovery(cause error) {
	l.state = stateFailed
	l.poison(cause)
	l.reportFailed()
	l.rec = nil
	assert.That(
		l.readsWaiting == 0 && len(l.fetches) == 0,
		"plog: a read was issued before recovery finished",
	)
}
