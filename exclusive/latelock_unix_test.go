//go:build unix

package exclusive

import (
	"errors"
	"testing"
	"time"

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
