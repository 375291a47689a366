package dets

import (
	"errors"
	"os"
	"testing"
)

// TestRepairBeyondAddressSpace: on a 32-bit target a file larger than the
// process can map or hold is refused with ErrFileTooLarge and left as it
// was, instead of a panic in make. test.sh runs it in its linux/386 step.
func TestRepairBeyondAddressSpace(t *testing.T) {
	if is64bit == 1 {
		t.Skip("only a 32-bit target lacks the address space")
	}
	path := tmpFile(t, "big.dets")
	const size = 3 << 30 // sparse: no disk space is used
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Skipf("cannot make a sparse file: %v", err)
	}
	_, err := Repair(path, Options{}, nil)
	if !errors.Is(err, ErrFileTooLarge) {
		t.Fatalf("got %v, want ErrFileTooLarge", err)
	}
	t.Log(err)
	if fi, err := os.Stat(path); err != nil || fi.Size() != size {
		t.Fatalf("file changed: %v %v", fi, err)
	}
	if _, err := os.Stat(tmpPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
}
