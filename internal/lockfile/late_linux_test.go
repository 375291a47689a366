//go:build linux

package lockfile

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockFreeElsewhere reports whether a new open file description of the
// sidecar can take the lock now. Acquire would not do as the probe: it may
// reuse the parked descriptor, and flock succeeds on the description that
// already holds the lock.
func lockFreeElsewhere(t *testing.T, sidecar string) bool {
	t.Helper()
	fd, err := unix.Open(sidecar, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd) // also drops the probe's own lock
	err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	if err != nil && !errors.Is(err, unix.EWOULDBLOCK) {
		t.Fatal(err)
	}
	return err == nil
}

// startLate makes the first lock attempt of an acquisition that waits up
// to wait begin only once that wait is over: the deadline is taken before
// the hook runs, so the flock that follows succeeds after it, by about a
// millisecond on an idle machine.
func startLate(wait time.Duration) (h *Hooks, called *atomic.Bool) {
	called = new(atomic.Bool)
	h = &Hooks{BeforeFlock: func(string) {
		if called.CompareAndSwap(false, true) {
			time.Sleep(wait + time.Millisecond)
		}
	}}
	return h, called
}

// A lock obtained after the deadline is given back however little late it
// is (it used to be kept when less than one PollInterval late).
func TestSlightlyLateAcquisitionReleased(t *testing.T) {
	data := filepath.Join(t.TempDir(), "t.dets")
	const wait = 30 * time.Millisecond
	h, called := startLate(wait)
	start := time.Now()
	l, err := Acquire(data, Options{Wait: wait, Hooks: h})
	if err == nil {
		late := time.Since(start) - wait
		mustUnlock(t, l)
		t.Fatalf("a lock obtained at most %v after the deadline was kept", late)
	}
	if !called.Load() {
		t.Fatal("the hook that delays the attempt never ran")
	}
	if !errors.Is(err, ErrTimedOut) {
		t.Fatalf("want ErrTimedOut, got %v", err)
	}
	if !lockFreeElsewhere(t, data+SidecarSuffix) {
		t.Fatal("the late lock is still held")
	}
	// A single attempt has no deadline: the same delay does not fail it.
	h, _ = startLate(wait)
	mustUnlock(t, mustAcquire(t, data, Options{Hooks: h}))
}

// A poller makes no attempt after a pause that ran to the deadline: the
// lock such an attempt took would be late, only taken to be given back
// (and in the way of another process's single attempt meanwhile).
func TestNoAttemptAfterFinalPause(t *testing.T) {
	data := filepath.Join(t.TempDir(), "t.dets")
	holder := mustAcquire(t, data, Options{})
	defer mustUnlock(t, holder)
	var events []time.Duration // 0 for an attempt, else a pause
	h := &Hooks{
		Flock: func(fd, how int) error {
			if how&unix.LOCK_EX != 0 {
				events = append(events, 0)
			}
			return unix.Flock(fd, how)
		},
		// A Sleep hook also makes the waiter poll instead of blocking.
		Sleep: func(d time.Duration) {
			events = append(events, d)
			time.Sleep(d)
		},
	}
	if _, err := Acquire(data, Options{Wait: 50 * time.Millisecond, Hooks: h}); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("want ErrTimedOut, got %v", err)
	}
	for i, d := range events {
		if d != 0 && d < PollInterval && i != len(events)-1 {
			t.Fatalf("an attempt followed the final pause: %v", events)
		}
	}
	t.Logf("attempts and pauses: %v", events)
}

// A late lock whose release fails is not a plain timeout: the error says
// the release failed (the lock may still be held), wraps its cause and
// still matches ErrTimedOut. Options.ReleaseUnused, if set, does the
// release, and only for a late lock.
func TestLateReleaseFailure(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "t.dets")
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	resolved := filepath.Join(realDir, "t.dets")
	const wait = 30 * time.Millisecond
	check := func(t *testing.T, err, cause error) {
		t.Helper()
		var le *LateReleaseError
		if !errors.As(err, &le) || !errors.Is(err, ErrTimedOut) || !errors.Is(err, cause) {
			t.Fatalf("want a *LateReleaseError matching ErrTimedOut and %v, got %v", cause, err)
		}
		if le.Path != resolved {
			t.Fatalf("Path %s, want %s", le.Path, resolved)
		}
		for _, s := range []error{ErrBusy, ErrUnsafeAlias, ErrUnsupportedFilesystem, ErrReleased} {
			if errors.Is(err, s) {
				t.Fatalf("%v also matches %v", err, s)
			}
		}
	}

	t.Run("LOCK_UN fails", func(t *testing.T) {
		h, _ := startLate(wait)
		h.Flock = func(fd, how int) error {
			if how == unix.LOCK_UN {
				return unix.EIO
			}
			return unix.Flock(fd, how)
		}
		_, err := Acquire(data, Options{Wait: wait, Hooks: h})
		check(t, err, unix.EIO)
		// Unlock closed the descriptor after the failed LOCK_UN.
		if !lockFreeElsewhere(t, data+SidecarSuffix) {
			t.Fatal("the late lock is still held")
		}
	})

	t.Run("ReleaseUnused", func(t *testing.T) {
		injected := errors.New("injected release failure")
		calls := 0
		release := func(l *Lock) error {
			calls++
			if l.DataPath() != resolved {
				t.Errorf("ReleaseUnused got the lock of %s", l.DataPath())
			}
			if err := l.Unlock(); err != nil {
				return err
			}
			return injected
		}
		h, _ := startLate(wait)
		_, err := Acquire(data, Options{Wait: wait, Hooks: h, ReleaseUnused: release})
		check(t, err, injected)
		if calls != 1 {
			t.Fatalf("ReleaseUnused called %d times", calls)
		}
		// Nothing to release for a lock in time.
		mustUnlock(t, mustAcquire(t, data, Options{Wait: wait, ReleaseUnused: release}))
		if calls != 1 {
			t.Fatal("ReleaseUnused called for a lock obtained in time")
		}
	})
}
