package main

import (
	"path/filepath"
	"testing"

	"github.com/godets/godets/internal/testutil"
)

// TestLoadFullDiskCount is TestLoadWriteFailureCount on a real full disk:
// a load of 5000 objects into a 256 KiB tmpfs fails with ENOSPC, and its
// error's numbers must agree with a repair of the file (copied out first:
// the repair needs room beside it).
func TestLoadFullDiskCount(t *testing.T) {
	dir := testutil.SmallTmpfs(t, "256k")
	input := writeLoadInput(t, t.TempDir(), 5000)
	path := filepath.Join(dir, "t.dets")
	r := runDets(t, "load", path, input)
	saved := filepath.Join(t.TempDir(), "t.dets")
	testutil.CopyFile(t, path, saved, 0o644)
	checkFailedLoad(t, "a 256 KiB tmpfs", r, saved, 5000)
}
