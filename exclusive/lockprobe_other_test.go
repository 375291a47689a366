//go:build !unix

package exclusive

import (
	"errors"
	"testing"

	"github.com/godets/godets/internal/lockfile"
)

// lockIsFree reports whether another owner could take the file's lock
// now. On Windows lockfile keeps nothing between attempts (each opens the
// semaphore afresh and closes it unless it takes the count), so an
// acquisition through it is such an owner.
func lockIsFree(t *testing.T, path string) bool {
	t.Helper()
	l, err := lockfile.Acquire(path, lockfile.Options{})
	if errors.Is(err, lockfile.ErrBusy) {
		return false
	}
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	return true
}
