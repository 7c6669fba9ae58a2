//go:build !narad_mut_novotersguard

package meta

const mutNoVotersGuard = false
