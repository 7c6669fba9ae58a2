package disk

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/assert"
)

// Kind names one file-system operation.
type Kind uint8

// The operations. Each states its contract; both shells (io/osfs and sim) must honour it.
const (
	// KindCreate creates an empty file at Name, replacing any file of that name, and
	// creating the parent directory if it is missing. The new directory entry is not durable
	// until a KindSyncDir of the parent directory completes.
	KindCreate Kind = iota + 1
	// KindWriteAt writes Data at offset Off of an existing file, growing it if needed. The
	// bytes are visible to reads at once but durable only after a later KindSync of the file
	// completes successfully. Returns ErrNoSpace when the device is full (nothing written).
	KindWriteAt
	// KindReadAt reads up to Len bytes at offset Off. Result.Data is shorter than Len only
	// at end of file. A read may fail with ErrIO or, on the simulated disk, return bytes that
	// differ from what is stored (read corruption is transient: a re-read may be clean).
	//
	// A plain read is served from the page cache: it returns what was written, whatever
	// the device holds. With Op.Device set it reads the device, bypassing the cache: the
	// bytes a crash of the machine right now would leave for that range, as far as the
	// range was made durable by a successful KindSync. It is the read a read-back after a
	// sync needs (a silently corrupted, lost or misdirected write is visible only on the
	// device). Dirty bytes in the range may be written back by the read itself (Linux
	// flushes the range before an O_DIRECT read); callers issue it only over synced bytes.
	// A device read may fail with ErrIO or return flipped bits like a cached one.
	KindReadAt
	// KindSync is fdatasync: on success every write to the file that completed before the
	// sync was issued is durable, and so is the file's size. On failure (ErrIO) the file is
	// poisoned: nothing written since the last successful sync may be trusted, and a later
	// successful sync does NOT make it durable (Linux marks the pages clean). Callers treat a
	// failed sync as fatal for the file and never retry it.
	KindSync
	// KindTruncate sets the size of an existing file to Off. Durable after a KindSync.
	KindTruncate
	// KindRename renames Name to NewName atomically, replacing NewName if it exists. Durable
	// after a KindSyncDir of the directory.
	KindRename
	// KindRemove removes the file Name. Durable after a KindSyncDir of its directory.
	// Removing a missing file returns ErrNotExist.
	KindRemove
	// KindList returns the names (not paths) of the files in directory Name, sorted. A
	// missing directory lists as empty.
	KindList
	// KindSyncDir makes the directory entries of directory Name durable (fsync of the
	// directory): creates, renames and removes done before it was issued survive a crash.
	KindSyncDir
	// KindListDirs returns the names of the directories directly in directory Name, sorted
	// (in Result.Names). A missing directory lists as empty.
	KindListDirs
	// KindRemoveDir removes the empty directory Name. Durable after a KindSyncDir of its
	// parent. A missing directory returns ErrNotExist; one that holds a file, ErrNotEmpty.
	KindRemoveDir
)

// KindCount sizes arrays indexed by Kind.
const KindCount = KindRemoveDir + 1

var kindNames = [...]string{
	"",
	"create",
	"write",
	"read",
	"sync",
	"truncate",
	"rename",
	"remove",
	"list",
	"syncdir",
	"listdirs",
	"removedir",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Operating errors a shell may return. Shells wrap their own errors so that errors.Is
// matches one of these; anything else is treated as ErrIO.
var (
	ErrIO       = errors.New("disk: i/o error")
	ErrNoSpace  = errors.New("disk: no space left on device")
	ErrNotExist = errors.New("disk: file does not exist")
	ErrNotEmpty = errors.New("disk: directory not empty")
)

// Op is a disk action: the core asks a shell to perform it. Names are slash-separated
// paths relative to the node's data directory (for example "wal/0000000000000001.seg").
//
// Ops are independent: a shell may run several at once and complete them in any order.
// When one op must follow another (write before sync, sync before ack), the core issues
// the second only after the first's Result arrived.
type Op struct {
	ID      uint64 // chosen by the core, unique among ops in flight, echoed in Result
	Kind    Kind
	Name    string // file, or directory for KindList and KindSyncDir
	NewName string // KindRename target
	Off     int64  // KindWriteAt/KindReadAt offset; KindTruncate size
	Len     int    // KindReadAt length
	Device  bool   // KindReadAt: read the device, bypassing the page cache (see KindReadAt)
	Data    []byte // KindWriteAt bytes; the core does not touch them until the Result arrives
}

func (o Op) String() string {
	switch o.Kind {
	case KindWriteAt:
		return fmt.Sprintf("#%d write %s@%d+%d", o.ID, o.Name, o.Off, len(o.Data))
	case KindReadAt:
		if o.Device {
			return fmt.Sprintf("#%d read-device %s@%d+%d", o.ID, o.Name, o.Off, o.Len)
		}
		return fmt.Sprintf("#%d read %s@%d+%d", o.ID, o.Name, o.Off, o.Len)
	case KindTruncate:
		return fmt.Sprintf("#%d truncate %s to %d", o.ID, o.Name, o.Off)
	case KindRename:
		return fmt.Sprintf("#%d rename %s to %s", o.ID, o.Name, o.NewName)
	default:
		return fmt.Sprintf("#%d %s %s", o.ID, o.Kind, o.Name)
	}
}

// Result is the completion of an Op, fed back to the core as an event.
type Result struct {
	ID    uint64
	Kind  Kind
	Data  []byte   // KindReadAt: the bytes read
	Names []string // KindList: sorted file names; KindListDirs: sorted directory names
	Err   error    // nil, or an error matching ErrIO, ErrNoSpace, ErrNotExist or ErrNotEmpty
}

// FS is a file system that executes one op synchronously. Both the real shell (io/osfs)
// and the simulated disk (sim) implement it; Apply routes an Op to it.
type FS interface {
	Create(name string) error
	WriteAt(name string, off int64, data []byte) error
	ReadAt(name string, off int64, n int) ([]byte, error)
	// ReadDevice is ReadAt bypassing the page cache (Op.Device; see KindReadAt).
	ReadDevice(name string, off int64, n int) ([]byte, error)
	Sync(name string) error
	Truncate(name string, size int64) error
	Rename(from, to string) error
	Remove(name string) error
	List(dir string) ([]string, error)
	SyncDir(dir string) error
	ListDirs(dir string) ([]string, error)
	RemoveDir(dir string) error
}

// Apply performs op on fs and returns its Result.
func Apply(fs FS, op Op) Result {
	r := Result{ID: op.ID, Kind: op.Kind}
	switch op.Kind {
	case KindCreate:
		r.Err = fs.Create(op.Name)
	case KindWriteAt:
		r.Err = fs.WriteAt(op.Name, op.Off, op.Data)
	case KindReadAt:
		if op.Device {
			r.Data, r.Err = fs.ReadDevice(op.Name, op.Off, op.Len)
		} else {
			r.Data, r.Err = fs.ReadAt(op.Name, op.Off, op.Len)
		}
	case KindSync:
		r.Err = fs.Sync(op.Name)
	case KindTruncate:
		r.Err = fs.Truncate(op.Name, op.Off)
	case KindRename:
		r.Err = fs.Rename(op.Name, op.NewName)
	case KindRemove:
		r.Err = fs.Remove(op.Name)
	case KindList:
		r.Names, r.Err = fs.List(op.Name)
	case KindSyncDir:
		r.Err = fs.SyncDir(op.Name)
	case KindListDirs:
		r.Names, r.Err = fs.ListDirs(op.Name)
	case KindRemoveDir:
		r.Err = fs.RemoveDir(op.Name)
	default:
		assert.Failf("disk: unknown op kind %d", op.Kind)
	}
	return r
}
