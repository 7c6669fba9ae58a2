package meta

import (
	"bytes"
	"fmt"

	"github.com/narad/narad/core/assert"
	"github.com/narad/narad/core/disk"
)

// readBack is the verification of bytes just made durable: after the fdatasync the
// store reads them back and compares them with what it wrote, so that a write the disk
// silently damaged is never trusted (and never answered). A read that matches proves the
// stored bytes; a read that differs or fails may be a fault of the read itself, so it is
// retried, up to ReadRetriesMax times, before the store fails.
type readBack struct {
	name  string
	off   int64
	want  []byte
	tries int
}

func (s *Store) startReadBack(p opPurpose, name string, off int64, want []byte) {
	s.verify = &readBack{name: name, off: off, want: want}
	s.issueReadBack(p)
}

func (s *Store) issueReadBack(p opPurpose) {
	v := s.verify
	s.issue(
		p,
		disk.Op{Kind: disk.KindReadAt, Device: true, Name: v.name, Off: v.off, Len: len(v.want)},
	) // the device, not the page cache
}

// onReadBack handles the read's result. It returns true once the bytes are proven; false
// when it issued a retry or failed the store.
func (s *Store) onReadBack(p opPurpose, res disk.Result) bool {
	v := s.verify
	assert.That(v != nil, "meta: read-back result with no read-back in flight")
	if res.Err == nil && bytes.Equal(res.Data, v.want) {
		s.verify = nil
		return true
	}
	if v.tries < ReadRetriesMax {
		v.tries++
		s.issueReadBack(p)
		return false
	}
	s.verify = nil
	s.fail(
		fmt.Errorf("%w: %s@%d+%d reads back different from what was written and synced (read error: %v)",
			ErrCorrupt, v.name, v.off, len(v.want), res.Err),
	)
	return false
}
