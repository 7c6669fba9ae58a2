package osfs

import (
	"math/bits"
	"sync"
	"unsafe"
)

// Aligned buffers for O_DIRECT reads, pooled by power-of-two size class: every group
// commit and partition commit reads its bytes back from the device, and one buffer
// allocated per read-back was a quarter of the bytes a cluster node allocated under load
// (docs/benchmarks.md, issue 16, fourth session). A read larger than the largest class
// allocates its own.
const (
	alignedClassMin = 12 // 4 KiB: deviceAlign
	alignedClassMax = 23 // 8 MiB: a commit's largest frames (plog.CopyBytesMax)
)

var alignedPools [alignedClassMax + 1]sync.Pool

// alignedBlock is a pooled buffer: raw holds 1<<class bytes from a deviceAlign-aligned
// address on.
type alignedBlock struct {
	raw   []byte
	class int
}

// getAligned returns a deviceAlign-aligned buffer of size bytes and the block to give
// back with putAligned once the buffer is no longer used (nil: not pooled).
func getAligned(size int) (*alignedBlock, []byte) {
	c := max(alignedClassMin, bits.Len(uint(size-1)))
	if c > alignedClassMax {
		return nil, alignedBuf(size)
	}
	b, _ := alignedPools[c].Get().(*alignedBlock)
	if b == nil {
		b = &alignedBlock{raw: alignedBuf(1 << c), class: c}
	}
	return b, b.raw[:size]
}

// putAligned gives a buffer of getAligned back to its pool.
func putAligned(b *alignedBlock) {
	if b != nil {
		alignedPools[b.class].Put(b)
	}
}

// alignedBuf returns a buffer of size bytes whose address is deviceAlign-aligned.
func alignedBuf(size int) []byte {
	raw := make([]byte, size+deviceAlign)
	shift := int(uintptr(unsafe.Pointer(&raw[0])) & (deviceAlign - 1))
	if shift != 0 {
		shift = deviceAlign - shift
	}
	return raw[shift : shift+size]
}
