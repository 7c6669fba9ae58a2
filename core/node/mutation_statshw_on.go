//go:build narad_mut_statshw

package node

// mutStatsHW plants a bug (Makefile MUTATIONS): GetTopic's high watermark counts the
// records of the partition commit in flight, before they are synced and verified. Only
// the linearizability check sees it (a watermark read, then a replay below it that finds
// nothing, or a watermark that goes back after the commit fails).
const mutStatsHW = true
