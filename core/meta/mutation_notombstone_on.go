//go:build narad_mut_notombstone

package meta

// mutNoTombstone plants a bug (Makefile MUTATIONS): a forgotten id may join again, so a
// forgotten node that comes back is a member with its stale state. The metastore
// simulator's forget check sees it.
const mutNoTombstone = true
