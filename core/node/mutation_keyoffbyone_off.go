//go:build !narad_mut_keyoffbyone

package node

// mutKeyOffByOne is off: see mutation_keyoffbyone_on.go.
const mutKeyOffByOne = false
