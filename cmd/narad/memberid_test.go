package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data directory keeps the member id it was first served with: the same id opens it
// again, another is refused with a message naming both, and a damaged file is refused.
func TestDataDirectoryPinsMemberID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := pinMemberID(dir, 2); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := pinMemberID(dir, 2); err != nil {
		t.Fatalf("same id again: %v", err)
	}
	err := pinMemberID(dir, 3)
	if err == nil || !strings.Contains(err.Error(), "belongs to member 2, not 3") {
		t.Fatalf("another id: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, memberIDFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pinMemberID(dir, 2); err == nil {
		t.Fatalf("a damaged id file was accepted")
	}
}
