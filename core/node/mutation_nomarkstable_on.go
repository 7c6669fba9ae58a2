//go:build narad_mut_nomarkstable

package node

// mutNoMarksTable plants a bug (Makefile MUTATION_TESTS): a follower drops the table of
// marks its leader passes on, so a forget of a dead leader answers no records given up.
// TestForgetDeadLeaderReportsItsMarks sees it.
const mutNoMarksTable = true
