// Package frame is the one record framing of Narad's files: the ingress WAL's segments,
// a partition's log, its ack log and ack snapshot, the metastore's raft log and snapshot.
// Each of those packages owns its body layout and its format bytes; this package owns the
// envelope around them, its checksum and the decoding outcomes recovery decides on. It is
// a set of pure functions: no state, no I/O.
//
// # Layout (on disk: do not change; a new body layout takes a new format byte)
//
//	offset  size  field
//	0       4     crc     CRC-32C (Castagnoli) of bytes 4 .. 9+length, little-endian
//	4       4     length  body length in bytes, little-endian
//	8       1     format  the owner's body layout (never 0 in a written frame)
//	9       n     body    length bytes
//
// The checksum covers the length and the format, so a torn or misdirected header fails it
// like a torn body. It starts from a seed: 0 gives the plain CRC-32C; a non-zero seed (the
// CRC of a partition's tag, in the ack log and the partition log) makes a frame valid only
// where it belongs.
//
// # Writing
//
//	start := len(dst)
//	dst, body := frame.Append(dst, formatV1, bodyLen)
//	... fill every byte of body ...
//	frame.Seal(dst[start:], 0)
//
// # Reading
//
// Peek reads the header against the owner's bounds on the body length; Header.Body checks
// that the frame is whole and that its checksum holds. Read does both with seed 0. The
// outcomes are distinct errors, the inputs of each owner's recovery table:
//
//	ErrZero      the header is all zero bytes: space never written (a preallocated tail)
//	ErrShort     the data ends inside the header or the body: read on, or a torn tail
//	ErrLength    the length field is outside the owner's bounds: damage
//	ErrChecksum  the checksum does not hold: damage, or a torn write
//
// A format byte the owner does not know is the owner's to refuse, after the checksum holds.
// No decoder here panics or allocates, whatever the bytes.
package frame
