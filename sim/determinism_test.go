package sim_test

import (
	"testing"

	"github.com/narad/narad/internal/detcheck"
)

// TestDeterminism holds sim/ to the same rules as core/ (DESIGN.md section 2): a
// simulator that reads the clock or iterates a map into its draws is not reproducible.
func TestDeterminism(t *testing.T) {
	vs, err := detcheck.CheckWarn(".", func(msg string) { t.Log("warning: " + msg) })
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("sim/%s", v)
	}
}
