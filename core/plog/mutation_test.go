//go:build narad_mut_skipreadback || narad_mut_hwbeforesync

package plog_test

import (
	"flag"
	"os"
	"testing"
)

// In a mutation build the rapid test is expected to fail. Its failure is not saved as a
// fail file: rapid replays every fail file in testdata, and the normal build would then
// carry the mutant's counterexample around.
func TestMain(m *testing.M) {
	flag.Parse()
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
