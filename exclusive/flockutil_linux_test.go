//go:build linux

package exclusive

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
	"github.com/godets/godets/internal/testutil"
	"golang.org/x/sys/unix"
)

// The tests here drive util-linux flock(1) and read /proc/locks, which only
// Linux has.

func procLocksLists(t *testing.T, sidecar string) bool {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(sidecar, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skip("no /proc/locks")
	}
	want := fmt.Sprintf("FLOCK  ADVISORY  WRITE %d ", os.Getpid())
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Join(f[1:5], " ") == strings.Join(strings.Fields(want), " ") &&
			strings.HasSuffix(f[5], ":"+strconv.FormatUint(st.Ino, 10)) {
			return true
		}
	}
	return false
}

// Behaviours 11, 12, 14, 16, 50 with util-linux flock(1).
func TestFlockUtilityInterop(t *testing.T) {
	fl := testutil.RequireCommand(t, "flock", "util-linux")
	path := filepath.Join(t.TempDir(), "t.dets")
	sidecar := path + lockfile.SidecarSuffix
	sleep, _ := exec.LookPath("sleep")
	var kid *exec.Cmd
	err := With(path, Options{}, func(*dets.Table) error {
		if got := testutil.TryFlock(t, fl, sidecar); got != 1 {
			return fmt.Errorf("flock -n during session exited %d", got)
		}
		if !procLocksLists(t, sidecar) {
			return errors.New("/proc/locks lacks our FLOCK WRITE entry")
		}
		// An unrelated open+close of the sidecar must not drop the lock.
		var wg sync.WaitGroup
		wg.Go(func() {
			if f, err := os.Open(sidecar); err == nil {
				f.Close()
			}
		})
		wg.Wait()
		if got := testutil.TryFlock(t, fl, sidecar); got != 1 {
			return fmt.Errorf("lock dropped by unrelated close (%d)", got)
		}
		if sleep != "" {
			kid = exec.Command(sleep, "10")
			if err := kid.Start(); err != nil {
				return err
			}
		}
		return nil
	})
	if kid != nil {
		defer func() { _ = kid.Process.Kill(); _ = kid.Wait() }()
	}
	if err != nil {
		t.Fatal(err)
	}
	// Released, even with a child started inside the callback still alive.
	if got := testutil.TryFlock(t, fl, sidecar); got != 0 {
		t.Fatalf("flock -n after session exited %d", got)
	}
	if procLocksLists(t, sidecar) {
		t.Fatal("/proc/locks still lists the sidecar")
	}
	// After error and panic endings too.
	_ = With(path, Options{}, func(*dets.Table) error { return errors.New("x") })
	func() {
		defer func() { _ = recover() }()
		_ = With(path, Options{}, func(*dets.Table) error { panic("x") })
	}()
	if got := testutil.TryFlock(t, fl, sidecar); got != 0 {
		t.Fatalf("flock -n after failed sessions exited %d", got)
	}
	// flock(1) holding the sidecar excludes a session.
	testutil.HoldFlock(t, fl, sidecar)
	if err := With(path, Options{}, noop); !errors.Is(err, ErrBusy) {
		t.Fatalf("with flock(1) holding: %v", err)
	}
}
