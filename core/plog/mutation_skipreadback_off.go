//go:build !narad_mut_skipreadback

package plog

// Deliberate bugs for the mutation check: each is switched on by its build tag in a
// sibling file (go test -tags narad_mut_skipreadback ./core/plog/ must fail). In every
// normal build they are false.
const mutSkipReadBack = false
