package assert_test

import (
	"testing"

	"github.com/narad/narad/core/assert"
)

func TestThatPanicsOnlyWhenBroken(t *testing.T) {
	assert.That(true, "x: holds")
	defer func() {
		if r := recover(); r != "invariant broken: x: broken" {
			t.Fatalf("recovered %v", r)
		}
	}()
	assert.That(false, "x: broken")
	t.Fatal("no panic")
}

func TestFailAndFailfAlwaysPanic(t *testing.T) {
	for want, f := range map[string]func(){
		"invariant broken: x: never": func() { assert.Fail("x: never") },
		"invariant broken: x: op 7":  func() { assert.Failf("x: op %d", 7) },
	} {
		func() {
			defer func() {
				if r := recover(); r != want {
					t.Fatalf("recovered %v, want %q", r, want)
				}
			}()
			f()
			t.Fatalf("%q: no panic", want)
		}()
	}
}
