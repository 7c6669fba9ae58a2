package sim

import (
	"maps"
	"path"
)

// The disk's own record of silent damage, per directory, for checkers that must tell a
// lost write the disk explains from one the core lost: the simulators excuse a lost ack
// only when the device damaged the partition's ack files after the ack was answered.
//
// A damage event is a fault that leaves the device different from what the page cache
// shows or what a successful call promised: a WriteAt stored corrupted, not at all, or
// misdirected (counted for the file written and for the file whose dirty bytes the data
// landed on), a failed Sync that lost dirty pages, and bit rot. Faults that change
// nothing (EIO, no space) and read faults (transient) are not damage: the core sees those.

// noteDamage counts one damage event to the device bytes of file name.
func (d *Disk) noteDamage(name string) {
	if d.damage == nil {
		d.damage = map[string]uint64{}
	}
	d.damage[cleanDir(path.Dir(name))]++
}

// Damage is the number of damage events to files of directory dir so far (dir as the
// names given to the disk spell it, without a trailing slash).
func (d *Disk) Damage(dir string) uint64 { return d.damage[cleanDir(dir)] }

// Damages returns a copy of the damage counts of every directory that had any.
func (d *Disk) Damages() map[string]uint64 { return maps.Clone(d.damage) }
