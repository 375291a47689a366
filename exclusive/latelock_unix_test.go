//go:build unix

package exclusive

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
	"golang.org/x/sys/unix"
)

// The test here wraps flock(2) in a hook, so it needs a flock-based lock.

// Behaviour 8: a lock obtained after the deadline is released, TimedOut is
// returned, and the opener is never called: whether the attempt stalled
// long past the deadline or ended just after it.
func TestLateAcquisitionNeverOpens(t *testing.T) {
	const wait = 30 * time.Millisecond
	for _, c := range []struct {
		name  string
		hooks *lockfile.Hooks
	}{
		{"long after", &lockfile.Hooks{Flock: func(fd, how int) error {
			if how&unix.LOCK_EX != 0 {
				time.Sleep(150 * time.Millisecond)
			}
			return unix.Flock(fd, how)
		}}},
		// The deadline is taken before the attempt starts, so an attempt
		// that starts once the wait is over ends after it, by little.
		{"just after", &lockfile.Hooks{BeforeFlock: func(string) { time.Sleep(wait + time.Millisecond) }}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.hooks.lock = c.hooks
			err := f.run(WaitUpTo(wait), func(*fakeTable) error { return nil })
			if !errors.Is(err, ErrTimedOut) || f.opens.Load() != 0 {
				t.Fatalf("got %v, opens %d", err, f.opens.Load())
			}
			if !lockIsFree(t, f.path) {
				t.Fatal("late lock kept")
			}
		})
	}
}

// failLateUnlock returns lock hooks under which the only attempt takes the
// lock well after a wait of wait (later than the PollInterval of slack
// once allowed, too), and releasing it fails with EIO. The failed LOCK_UN
// still closes the descriptor. If holding is set, it runs while the
// attempt holds the lock, before the acquisition learns it is late.
func failLateUnlock(wait time.Duration, holding func()) *lockfile.Hooks {
	first := true
	return &lockfile.Hooks{Flock: func(fd, how int) error {
		if how == unix.LOCK_UN {
			return unix.EIO
		}
		err := unix.Flock(fd, how)
		if err == nil && first {
			first = false
			if holding != nil {
				holding()
			}
			time.Sleep(wait + 2*lockfile.PollInterval)
		}
		return err
	}}
}

// A late lock whose release fails is a failed release, not a timeout
// alone: the session reports a *CleanupError after the timeout, never
// opens the table, logs, and quarantines the file for later sessions.
func TestLateReleaseFailureQuarantines(t *testing.T) {
	logs := captureLog(t)
	path := filepath.Join(t.TempDir(), "t.dets")
	const wait = 30 * time.Millisecond
	ran := false
	opts := Options{Wait: WaitUpTo(wait), hooks: &testHooks{lock: failLateUnlock(wait, nil)}}
	err := With(path, opts, func(*dets.Table) error { ran = true; return nil })
	var ce *CleanupError
	var ae *AcquisitionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCleanupFailed) || !errors.Is(err, unix.EIO) {
		t.Fatalf("want a cleanup failure wrapping EIO, got %v", err)
	}
	if !errors.As(ce.Primary, &ae) || ae.Reason != ErrTimedOut || !errors.Is(err, ErrTimedOut) || len(ce.Failures) != 1 {
		t.Fatalf("want the timeout as primary and one failure, got %v", err)
	}
	if Code(err) != "cleanup_failed" || CauseCode(err) != "timed_out" {
		t.Fatalf("codes %s / %s", Code(err), CauseCode(err))
	}
	if ran {
		t.Fatal("the callback ran")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the table was opened (and created): %v", err)
	}
	if out := logs.String(); !strings.Contains(out, "event="+EventCleanupFailed) {
		t.Fatalf("not logged: %s", out)
	}
	err = With(path, Options{Wait: WaitUpTo(time.Second)}, func(*dets.Table) error { ran = true; return nil })
	if !errors.As(err, &ae) || ae.Reason != ErrQuarantined || !errors.Is(err, ErrQuarantined) || ran {
		t.Fatalf("next session: ran %v, err %v, want ErrQuarantined", ran, err)
	}
	// Refused by the quarantine alone: the descriptor was closed.
	if !lockIsFree(t, path) {
		t.Fatal("the late lock is still held")
	}
}

// A session of this process that waits for the lock while a late lock's
// release fails must not run: the quarantine is in place before it can
// pass its check under the lock (see TestWaiterRefusedAfterFailedRelease).
func TestWaiterRefusedAfterLateReleaseFails(t *testing.T) {
	captureLog(t)
	b := newFixture(t)
	const wait = 30 * time.Millisecond
	bRan := false
	bDone := make(chan error, 1)
	holding := func() {
		go func() {
			bDone <- b.run(WaitUpTo(5*time.Second), func(*fakeTable) error { bRan = true; return nil })
		}()
		time.Sleep(100 * time.Millisecond) // let b start waiting
	}
	a := newFixture(t)
	a.path = b.path
	a.hooks.lock = failLateUnlock(wait, holding)
	if err := a.run(WaitUpTo(wait), func(*fakeTable) error { return nil }); !errors.Is(err, ErrCleanupFailed) || !errors.Is(err, ErrTimedOut) {
		t.Fatalf("a: %v, want a cleanup failure after a timeout", err)
	}
	if bErr := <-bDone; bRan || !errors.Is(bErr, ErrQuarantined) {
		t.Fatalf("b: ran %v, err %v, want ErrQuarantined without running", bRan, bErr)
	}
	if a.opens.Load() != 0 || b.opens.Load() != 0 {
		t.Fatalf("opens: a %d, b %d", a.opens.Load(), b.opens.Load())
	}
}

// A session that times out leaves its wait blocked in the kernel; the lock
// that wait obtains later is given back at once. When that release fails
// no session is left to return the failure to, yet this process may still
// hold the lock: the failure is logged and the file quarantined, before
// another session of the process can get past its check under the lock.
// Session b starts while the release fails and waits for the lock: it
// must be refused whether it meets the lock still held, just dropped, or
// gone with the quarantine already in place.
func TestAbandonedWaitReleaseFailureQuarantines(t *testing.T) {
	logs := captureLog(t)
	path := filepath.Join(t.TempDir(), "t.dets")
	holder, err := lockfile.Acquire(path, lockfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := newFixture(t)
	b.path = path
	var bRan atomic.Bool
	bDone := make(chan error, 1)
	var startB sync.Once
	inKernel := make(chan struct{}, 1)
	hooks := &lockfile.Hooks{Flock: func(fd, how int) error {
		switch how {
		case unix.LOCK_EX: // the blocking call, in the waiter's goroutine
			select {
			case inKernel <- struct{}{}:
			default:
			}
		case unix.LOCK_UN: // only the abandoned waiter releases with these hooks
			startB.Do(func() {
				go func() {
					bDone <- b.run(WaitUpTo(5*time.Second), func(*fakeTable) error { bRan.Store(true); return nil })
				}()
			})
			return unix.EIO
		}
		return unix.Flock(fd, how)
	}}
	err = With(path, Options{Wait: WaitUpTo(30 * time.Millisecond), hooks: &testHooks{lock: hooks}},
		func(*dets.Table) error { t.Error("the callback ran"); return nil })
	var ae *AcquisitionError
	if !errors.As(err, &ae) || ae.Reason != ErrTimedOut || errors.Is(err, ErrCleanupFailed) {
		t.Fatalf("want a plain timeout, got %v", err)
	}
	select {
	case <-inKernel:
	case <-time.After(5 * time.Second):
		t.Fatal("the session did not wait in the kernel")
	}
	if err := holder.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-bDone:
		if bRan.Load() || !errors.Is(err, ErrQuarantined) {
			t.Fatalf("b: ran %v, err %v, want ErrQuarantined without running", bRan.Load(), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned wait never released the lock, or b never ended")
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(logs.String(), "event="+EventCleanupFailed); {
		if time.Now().After(deadline) {
			t.Fatalf("the failed release was not logged: %q", logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	if out := logs.String(); !strings.Contains(out, "cause=abandoned_wait") || !strings.Contains(out, unix.EIO.Error()) {
		t.Fatalf("log lacks the cause or the failure: %s", out)
	}
	err = With(path, Options{}, func(*dets.Table) error { t.Error("a later session ran"); return nil })
	if !errors.Is(err, ErrQuarantined) {
		t.Fatalf("later session: %v, want ErrQuarantined", err)
	}
	if b.opens.Load() != 0 {
		t.Fatalf("b opened the table %d times", b.opens.Load())
	}
}
