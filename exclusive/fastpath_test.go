package exclusive

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/internal/lockfile"
)

// A quarantined file is refused even when it is reached through a path
// whose earlier session left a parked descriptor and whose directory was
// re-pointed since: the quarantine check runs again on the path found by
// the second resolution, before any lock is taken on it.
func TestQuarantineAfterPathRepointed(t *testing.T) {
	captureLog(t)
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	viaSub := filepath.Join(sub, "t.dets")
	// An existing file, so that the second session resolves tentatively.
	if err := os.WriteFile(viaSub, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.path = viaSub
	if err := f.run(Immediate, func(*fakeTable) error { return nil }); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(root, "real")
	if err := os.Rename(sub, real); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", sub); err != nil {
		t.Fatal(err)
	}
	// Quarantine the real path: the release fails after a real unlock, so
	// nothing stays held and only the path is recorded.
	q := newFixture(t)
	q.path = filepath.Join(real, "t.dets")
	q.hooks.unlock = func(l *lockfile.Lock) error {
		if err := l.Unlock(); err != nil {
			return err
		}
		return errors.New("injected unlock failure")
	}
	var ce *CleanupError
	if err := q.run(Immediate, func(*fakeTable) error { return nil }); !errors.As(err, &ce) {
		t.Fatalf("want a cleanup failure, got %v", err)
	}
	opens := f.opens.Load()
	err := f.run(Immediate, func(*fakeTable) error { return nil })
	if !errors.Is(err, ErrQuarantined) || f.opens.Load() != opens {
		t.Fatalf("want ErrQuarantined without an open, got %v", err)
	}
}

// The uncontended lock part of a session allocates little: resolution,
// the lock, nothing per system call (the already-open check uses the
// identity the lock checked).
func TestLockedAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	if os.Getenv("GODETS_QEMU") != "" {
		// qemu-user 7.2 has no openat2: the lock proves paths with the
		// portable walk, which allocates its path elements.
		t.Skip("under qemu-user: no openat2, the fallback walk allocates")
	}
	path := filepath.Join(t.TempDir(), "t.dets")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fn := func(string) error { return nil }
	if err := Locked(path, Options{}, fn); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if err := Locked(path, Options{}, fn); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per Locked", n)
	// 3 in lockfile: Target, its path buffer, Lock.
	if n > 3 {
		t.Fatalf("%.1f allocations per Locked session, want at most 3", n)
	}
}
