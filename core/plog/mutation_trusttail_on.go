//go:build narad_mut_trusttail

package plog

// Mutation: recovery accepts the newest frame of the last segment as the scan read it,
// without reading it back from the device after the recovery sync (row R11): a frame
// past the verified tail is served.
const mutTrustTail = true
