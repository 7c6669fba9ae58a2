// Package disk is the contract between the deterministic core and the file system.
//
// The core never touches a file. It emits Ops (actions) and receives Results (events):
//
//	ops := machine.Ready()          // e.g. write wal/…seg, then later sync it
//	for _, op := range ops {
//		go func() { results <- disk.Apply(fs, op) }()   // in a shell, never in core/
//	}
//	machine.Step(now, DiskDone{<-results})
//
// Two shells implement FS: io/osfs (real files, fdatasync, directory fsync) and sim
// (an in-memory disk with the fault model of DESIGN.md section 3). Every method's
// contract is written on its Kind constant; the simulated disk is the executable form of
// those contracts, including what a crash keeps and what a failed sync loses.
package disk
