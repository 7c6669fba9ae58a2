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
