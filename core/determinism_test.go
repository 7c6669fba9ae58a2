package core_test

import (
	"testing"

	"github.com/narad/narad/internal/detcheck"
)

// TestDeterminism checks every non-test .go file under core/ against the determinism
// rules of DESIGN.md section 2 (see package detcheck for the exact list). A package that
// is mid-edit and does not type-check is still checked by syntax; its errors are logged.
func TestDeterminism(t *testing.T) {
	vs, err := detcheck.CheckWarn(".", func(msg string) { t.Log("warning: " + msg) })
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Errorf("core/%s", v)
	}
	if len(vs) > 0 {
		t.Errorf("%d determinism violations under core/ (DESIGN.md section 2); a map range whose keys are sorted may be marked %s", len(vs), detcheck.SortedMarker)
	}
}
