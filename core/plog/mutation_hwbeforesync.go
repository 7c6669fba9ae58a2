//go:build narad_mut_hwbeforesync

package plog

// Mutation: advance the high-watermark and answer a commit when its write completes,
// before the fdatasync (which is issued and never waited for). A crash then loses
// acknowledged records. The rapid and sim tests must catch it.
const mutHWBeforeSync = true
