//go:build !narad_mut_releaseearly

package node

const mutReleaseEarly = false
