//go:build narad_mut_cutoverunverified

package node

// mutCutOverUnverified plants a bug (Makefile MUTATIONS): a move's destination asks for the
// cutover as soon as the freeze applied, without copying the frozen tail or the acks; the
// records committed at the source since its last fetch are in no copy the new owner
// serves.
const mutCutOverUnverified = true
