//go:build !linux && !darwin && !freebsd && !windows

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Behaviour 34: on unsupported systems every call fails with
// ErrUnsupportedTarget and touches no file.
func TestUnsupportedTarget(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "t.dets")
	if _, err := Acquire(data, Options{}); !errors.Is(err, ErrUnsupportedTarget) {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := Resolve(data, nil); !errors.Is(err, ErrUnsupportedTarget) {
		t.Fatalf("Resolve: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("files created: %v", ents)
	}
}
