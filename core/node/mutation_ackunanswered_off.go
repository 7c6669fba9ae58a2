//go:build !narad_mut_ackunanswered

package node

const mutAckUnanswered = false
