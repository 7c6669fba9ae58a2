//go:build !narad_mut_nomarkstable

package node

const mutNoMarksTable = false
