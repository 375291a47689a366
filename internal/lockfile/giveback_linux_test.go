package lockfile

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestGiveBackCountedBeforeForgotten: a single attempt that meets the lock
// held by this process's abandoned waiter, which then gives it back, must
// not answer ErrBusy against nobody. The attempt either finds the waiter
// (and waits for it) or, the waiter gone, a changed count of give-backs
// (and tries again), so the count must change before the waiter is
// forgotten. Here the attempt's flock fails while the waiter holds the
// lock, and its checks run just after the waiter was forgotten.
func TestGiveBackCountedBeforeForgotten(t *testing.T) {
	waitNoBlocked(t) // other tests' waiters must not meet the hook
	dir := t.TempDir()
	data := newDataFile(t, dir, "t.dets")
	holder := mustAcquire(t, data, Options{})
	if _, err := Acquire(data, Options{Wait: 20 * time.Millisecond}); err != ErrTimedOut {
		t.Fatalf("the waiter: %v, want ErrTimedOut", err)
	}
	forgotten, proceed := make(chan struct{}), make(chan struct{})
	hook := func() {
		close(forgotten)
		<-proceed
	}
	afterAbandonedForget.Store(&hook)
	t.Cleanup(func() { afterAbandonedForget.Store(nil) })
	first := true
	h := &Hooks{Flock: func(fd, how int) error {
		err := unix.Flock(fd, how)
		if first && how == unix.LOCK_EX|unix.LOCK_NB {
			first = false
			if err == nil {
				t.Error("the attempt got the lock the holder has")
				return nil
			}
			// Met the lock: now the holder lets go, the abandoned
			// waiter gets the lock and gives it back.
			mustUnlock(t, holder)
			select {
			case <-forgotten:
			case <-time.After(5 * time.Second):
				t.Error("the abandoned waiter never gave the lock back")
			}
		}
		return err
	}}
	l, err := Acquire(data, Options{Hooks: h})
	close(proceed)
	waitNoBlocked(t)
	if err != nil {
		t.Fatalf("a single attempt after the abandoned waiter gave the lock back: %v", err)
	}
	mustUnlock(t, l)
}
