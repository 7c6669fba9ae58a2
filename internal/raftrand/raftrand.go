// Package raftrand makes etcd raft's randomness come from a simulation's seed. Raft draws
// its randomized election timeouts from crypto/rand.Reader, a process-wide variable;
// DESIGN.md section 2 has the simulator replace it with a stream derived from the seed,
// one simulation per process at a time. With does that: it serializes the callers,
// swaps the reader for f's duration and puts the real one back. It lives outside sim/
// because it needs a lock and crypto/rand, which the determinism rules keep out of
// sim/ and core/.
package raftrand

import (
	"crypto/rand"
	"io"
	"sync"
)

var mu sync.Mutex

// With runs f with crypto/rand.Reader replaced by r. Concurrent calls run one at a time.
func With(r io.Reader, f func()) {
	mu.Lock()
	defer mu.Unlock()
	saved := rand.Reader
	rand.Reader = r
	defer func() { rand.Reader = saved }()
	f()
}
