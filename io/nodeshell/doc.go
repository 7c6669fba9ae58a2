// Package nodeshell runs a core node (core/node) on real files with a real clock: it is
// the daemon's shell of DESIGN.md section 1, and it implements the HTTP layer's Broker.
//
// Every call into the core (a client request, a disk completion, a timer) happens under
// one mutex; the actions the core returns are carried out after the mutex is released:
// disk ops go to an io/osfs Executor, responses to the goroutines waiting for them. The
// clock is read here and passed into the core as a value. Nothing in the core blocks, so
// the mutex is held only for bookkeeping: producers arriving during a WAL fdatasync stage
// their records and join the next group commit. A step holds a read lock from its
// decision to submit ops until they are submitted; Close takes the write lock before it
// stops the executor, so no op is submitted to a closed executor.
//
// In a cluster (OpenCluster, peers.go) the shell also owns an io/peernet transport. The
// messages a step's Ready carries for peers are queued under the mutex, in the core's
// order, and sent by one goroutine per peer, so a step never waits on the network; a
// full queue or a failed send (no connection yet, a stream reset) drops the message and
// is reported to the core as a step of its own (node.SendFailed): a remote commit or call
// it carried fails at once, and the dispatcher sends the commit again after its 1 s
// backoff rather than its 30 s commit timeout. When io/peernet reports that a connection to a
// peer ended (what was buffered on it may be lost), the core is told too
// (node.PeerReset). A message from a peer is a step like any other (node.Receive). At most every 100 ms a step compares the members' addresses the
// metastore knows with those the transport has, and gives it the changed ones. Close
// closes the transport after the dispatcher's drain and the final flush (both may need
// peers) and before the executor stops.
package nodeshell
