package meta

import (
	"encoding/binary"
	"errors"

	"github.com/narad/narad/core/frame"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/narad/narad/core/assert"
)

// On-disk constants of raft.log and snap (drawn in doc.go). Do not change them; add a new
// format byte instead.
const (
	logFormatV1      = 1
	snapFormatV1     = 1
	frameHeaderBytes = frame.HeaderBytes // crc u32 | length u32 | format u8 (core/frame)
	logBodyFixed     = 1 + 24 + 4        // flags, term, vote, commit, entry count
	entryHeaderBytes = 8 + 8 + 1 + 4     // index, term, type, data length
	flagHardState    = 1 << 0
)

// Bounds on what a frame may hold. A Ready's frame is built from at most the uncommitted
// raft tail (ProposalsMax commands), a rewrite splits into frames of RewriteFrameBytes.
const (
	// FrameBytesMax bounds one raft.log frame; recovery treats a larger length as damage.
	FrameBytesMax = 64 << 20
	// EntryBytesMax bounds the data of one raft entry inside a frame.
	EntryBytesMax = 1 << 20
	// SnapBytesMax bounds the snapshot file.
	SnapBytesMax = 256 << 20
	// RewriteFrameBytes is the body size at which a log rewrite starts a new frame.
	RewriteFrameBytes = 4 << 20
)

// hardState is raft's HardState as a value.
type hardState struct {
	Term, Vote, Commit uint64
}

func (h hardState) isEmpty() bool { return h == hardState{} }

func (h hardState) pb() *raftpb.HardState {
	return &raftpb.HardState{Term: new(h.Term), Vote: new(h.Vote), Commit: new(h.Commit)}
}

func hardStateOf(p *raftpb.HardState) hardState {
	return hardState{Term: p.GetTerm(), Vote: p.GetVote(), Commit: p.GetCommit()}
}

// logFrame is the decoded content of one raft.log frame: what one Ready persisted.
type logFrame struct {
	HasHardState bool
	HardState    hardState
	Entries      []*raftpb.Entry
}

// logFrameBytes is the encoded size of a frame holding ents.
func logFrameBytes(ents []*raftpb.Entry) int {
	n := frameHeaderBytes + logBodyFixed
	for _, e := range ents {
		n += entryHeaderBytes + len(e.GetData())
	}
	return n
}

// appendLogFrame appends one frame to dst. hs is written when it is not empty. Entries
// must be contiguous, and every piece within its bound: a violation is a programmer error.
func appendLogFrame(dst []byte, hs hardState, ents []*raftpb.Entry) []byte {
	n := logFrameBytes(ents)
	assert.That(n <= FrameBytesMax, "meta: log frame over FrameBytesMax")
	start := len(dst)
	dst, b := frame.Append(dst, logFormatV1, n-frameHeaderBytes)
	if !hs.isEmpty() {
		b[0] = flagHardState
	} else {
		b[0] = 0
	}
	binary.LittleEndian.PutUint64(b[1:], hs.Term)
	binary.LittleEndian.PutUint64(b[9:], hs.Vote)
	binary.LittleEndian.PutUint64(b[17:], hs.Commit)
	binary.LittleEndian.PutUint32(b[25:], uint32(len(ents)))
	p := logBodyFixed
	for i, e := range ents {
		assert.That(
			i == 0 || e.GetIndex() == ents[i-1].GetIndex()+1,
			"meta: log frame entries not contiguous",
		)
		assert.That(len(e.GetData()) <= EntryBytesMax, "meta: entry over EntryBytesMax")
		binary.LittleEndian.PutUint64(b[p:], e.GetIndex())
		binary.LittleEndian.PutUint64(b[p+8:], e.GetTerm())
		b[p+16] = byte(e.GetType())
		binary.LittleEndian.PutUint32(b[p+17:], uint32(len(e.GetData())))
		p += entryHeaderBytes
		p += copy(b[p:], e.GetData())
	}
	assert.That(p == len(b), "meta: log frame size mismatch")
	frame.Seal(dst[start:], 0)
	return dst
}

// appendRewriteFrames appends the frames of a rewritten log: every entry, split into
// frames of about RewriteFrameBytes, the HardState in the last one. A rewrite is synced
// before it is renamed into place, so its frames appear together or not at all.
func appendRewriteFrames(dst []byte, hs hardState, ents []*raftpb.Entry) []byte {
	for {
		n, size := 0, frameHeaderBytes+logBodyFixed
		for n < len(ents) {
			add := entryHeaderBytes + len(ents[n].GetData())
			if n > 0 && size+add > RewriteFrameBytes {
				break
			}
			size += add
			n++
		}
		if n == len(ents) {
			return appendLogFrame(dst, hs, ents)
		}
		dst = appendLogFrame(dst, hardState{}, ents[:n])
		ents = ents[n:]
	}
}

// Frame decoding outcomes: the inputs of the recovery decision table (doc.go).
var (
	errFormat = errors.New("meta: unknown frame format")
	errBody   = errors.New("meta: malformed frame body")
)

// checkFrame validates the header and checksum of the frame at the start of b and
// returns its format byte, its body (aliasing b) and its total size.
func checkFrame(b []byte, max int) (byte, []byte, int, error) {
	h, body, err := frame.Read(b, frame.Bounds{Min: 1, Max: max - frameHeaderBytes})
	return h.Format, body, h.Size, err
}

// decodeLogFrame decodes the raft.log frame at the start of b and returns it with its
// size, or an error saying why b does not start with a valid frame. Entry data is copied.
// It never panics, whatever b holds.
func decodeLogFrame(b []byte) (logFrame, int, error) {
	format, body, n, err := checkFrame(b, FrameBytesMax)
	if err != nil {
		return logFrame{}, 0, err
	}
	if format != logFormatV1 {
		return logFrame{}, 0, errFormat
	}
	if len(body) < logBodyFixed || body[0]&^flagHardState != 0 {
		return logFrame{}, 0, errBody
	}
	f := logFrame{HasHardState: body[0]&flagHardState != 0}
	f.HardState = hardState{
		Term:   binary.LittleEndian.Uint64(body[1:]),
		Vote:   binary.LittleEndian.Uint64(body[9:]),
		Commit: binary.LittleEndian.Uint64(body[17:]),
	}
	if !f.HasHardState && !f.HardState.isEmpty() || f.HasHardState && f.HardState.isEmpty() {
		return logFrame{}, 0, errBody
	}
	count := binary.LittleEndian.Uint32(body[25:])
	rest := body[logBodyFixed:]
	if uint64(count) > uint64(len(rest)/entryHeaderBytes) {
		return logFrame{}, 0, errBody
	}
	f.Entries = make([]*raftpb.Entry, 0, count)
	for i := uint32(0); i < count; i++ {
		if len(rest) < entryHeaderBytes {
			return logFrame{}, 0, errBody
		}
		index := binary.LittleEndian.Uint64(rest[0:])
		term := binary.LittleEndian.Uint64(rest[8:])
		typ := raftpb.EntryType(rest[16])
		dataLen := binary.LittleEndian.Uint32(rest[17:])
		rest = rest[entryHeaderBytes:]
		if index == 0 || term == 0 || dataLen > EntryBytesMax || int(dataLen) > len(rest) {
			return logFrame{}, 0, errBody
		}
		if typ != raftpb.EntryNormal && typ != raftpb.EntryConfChange && typ != raftpb.EntryConfChangeV2 {
			return logFrame{}, 0, errBody
		}
		if i > 0 && index != f.Entries[i-1].GetIndex()+1 {
			return logFrame{}, 0, errBody
		}
		e := &raftpb.Entry{Index: new(index), Term: new(term), Type: typ.Enum()}
		if dataLen > 0 {
			e.Data = append([]byte(nil), rest[:dataLen]...)
		}
		f.Entries = append(f.Entries, e)
		rest = rest[dataLen:]
	}
	if len(rest) != 0 {
		return logFrame{}, 0, errBody
	}
	return f, n, nil
}

// findValidFrame reports whether a valid raft.log frame starts anywhere in b at or after
// index from. Recovery uses it to tell a torn tail (nothing valid follows the damage)
// from damage in the middle of the log (something valid follows).
func findValidFrame(b []byte, from int) bool {
	for q := from; q+frameHeaderBytes+logBodyFixed <= len(b); q++ {
		if b[q+8] != logFormatV1 {
			continue
		}
		bodyLen := binary.LittleEndian.Uint32(b[q+4:])
		if bodyLen < logBodyFixed || int(bodyLen) > len(b)-q-frameHeaderBytes {
			continue
		}
		if _, _, err := decodeLogFrame(b[q:]); err == nil {
			return true
		}
	}
	return false
}

// appendSnapFile appends the snapshot file: one frame whose body is the JSON snapshot.
func appendSnapFile(dst []byte, body []byte) []byte {
	n := frameHeaderBytes + len(body)
	assert.That(len(body) > 0 && n <= SnapBytesMax, "meta: snapshot size out of range")
	start := len(dst)
	dst, fb := frame.Append(dst, snapFormatV1, len(body))
	copy(fb, body)
	frame.Seal(dst[start:], 0)
	return dst
}

// decodeSnapFile checks the snapshot file and decodes its content. The file must be
// exactly one frame: trailing bytes are damage.
func decodeSnapFile(b []byte) (snapshot, error) {
	format, body, n, err := checkFrame(b, SnapBytesMax)
	if err != nil {
		return snapshot{}, err
	}
	if format != snapFormatV1 {
		return snapshot{}, errFormat
	}
	if n != len(b) {
		return snapshot{}, errBody
	}
	return decodeSnapshotBody(body)
}
