package testutil

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallTmpfs mounts a tmpfs of size (mount's notation, "256k", "4m") on a
// directory the test owns, for tests of a full disk, or skips the test: it
// needs root, and a container may refuse mount even to root. Under CI=true
// (which runs as root) it fails instead: the full-disk tests must run.
func SmallTmpfs(t *testing.T, size string) string {
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
