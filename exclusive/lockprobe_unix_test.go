//go:build unix

package exclusive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/internal/lockfile"
	"golang.org/x/sys/unix"
)

// lockIsFree reports whether another owner could take the file's sidecar
// lock now. It asks with an open file description of its own, which
// nothing in this process shares: lockfile.Acquire would not do, since
// it may reuse a descriptor parked by an earlier session, and flock
// succeeds on a description that already holds the lock. A missing
// sidecar is a free lock (nothing can hold it), and none is created.
func lockIsFree(t *testing.T, path string) bool {
	t.Helper()
	target, err := lockfile.Resolve(path, nil)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	fd, err := unix.Open(target.Sidecar, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return true
	}
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	defer unix.Close(fd) // also drops the probe's own lock
	switch err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); {
	case err == nil:
		return true
	case errors.Is(err, unix.EWOULDBLOCK):
		return false
	default:
		t.Fatalf("probe: %v", err)
		return false
	}
}

// The probe sees a lock left on a parked descriptor. A Flock hook that
// skips LOCK_UN makes Unlock park the descriptor still locked, which is
// what a lockfile bug of that kind would look like; a probe that went
// through lockfile.Acquire would take that descriptor and call the lock
// free.
func TestLockIsFreeSeesParkedLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	keep := &lockfile.Hooks{Flock: func(fd, how int) error {
		if how == unix.LOCK_UN {
			return nil // the lock stays on the descriptor
		}
		return unix.Flock(fd, how)
	}}
	l, err := lockfile.Acquire(path, lockfile.Options{Hooks: keep})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if !descriptorOpenOn(t, l.SidecarPath()) {
		t.Skip("the descriptor was closed, not parked (parking needs statx's mount-root attribute)")
	}
	if lockIsFree(t, path) {
		t.Fatal("the probe calls free a lock held by a parked descriptor")
	}
}

// descriptorOpenOn reports whether this process has a descriptor open on
// path (Linux only; the test skips elsewhere).
func descriptorOpenOn(t *testing.T, path string) bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.TrimSuffix(target, " (deleted)") == path {
			return true
		}
	}
	return false
}
