//go:build !narad_mut_hwbeforesync

package plog

// See mutation_skipreadback_off.go. False in every normal build.
const mutHWBeforeSync = false
