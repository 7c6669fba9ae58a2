//go:build !narad_mut_sharedreadback

package osfs

// mutSharedReadBack plants a bug for the mutation check (see the _on file).
const mutSharedReadBack = false
