//go:build narad_mut_nodemote

package meta

// mutNoDemote plants a bug (Makefile MUTATIONS): voters past VotersTarget are never
// made learners, so four members left by a forget keep four voters (an even count that
// tolerates no more failures than three). The cluster check voters sees it (seed 209).
const mutNoDemote = true
