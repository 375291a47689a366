package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestLoadFullDiskCount is TestLoadWriteFailureCount on a real full disk:
// a load of 5000 objects into a 256 KiB tmpfs fails with ENOSPC, and its
// error's numbers must agree with a repair of the file (copied out first:
// the repair needs room beside it).
func TestLoadFullDiskCount(t *testing.T) {
	dir := smallTmpfs(t, "256k")
	input := writeLoadInput(t, t.TempDir(), 5000)
	path := filepath.Join(dir, "t.dets")
	r := runDets(t, "load", path, input)
	saved := filepath.Join(t.TempDir(), "t.dets")
	testutil.CopyFile(t, path, saved, 0o644)
	checkFailedLoad(t, "a 256 KiB tmpfs", r, saved, 5000)
}

// smallTmpfs mounts a tmpfs of size (mount's notation) on a directory the
// test owns, or skips the test: it needs root, and a container may refuse
// mount even to root. Under CI=true it fails instead, as the engine's
// full-disk tests do.
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("needs root to mount a small tmpfs")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		skip("mount not permitted: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}
