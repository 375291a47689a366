package kinds

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/exclusive"
)

func testOpts() exclusive.Options {
	return exclusive.Options{Repair: dets.AutoRepair, Wait: exclusive.WaitUpTo(5 * time.Second)}
}

func TestSessionsPerKind(t *testing.T) {
	dir := t.TempDir()
	setPath := filepath.Join(dir, "set.dets")
	must(t, WithExclusiveSet(setPath, testOpts(), String, Int, func(s *Set[string, int64]) error {
		return s.Insert("n", 7)
	}))
	must(t, WithExclusiveSet(setPath, testOpts(), String, Int, func(s *Set[string, int64]) error {
		if v, err := s.Lookup("n"); err != nil || v != 7 {
			t.Errorf("Lookup(n) = %d, %v", v, err)
		}
		return nil
	}))

	bagPath := filepath.Join(dir, "bag.dets")
	for _, v := range []string{"a", "b", "a"} {
		must(t, WithExclusiveBag(bagPath, testOpts(), String, String, func(b *Bag[string, string]) error {
			return b.Insert("k", v)
		}))
	}
	must(t, WithExclusiveBag(bagPath, testOpts(), String, String, func(b *Bag[string, string]) error {
		vs, err := b.Lookup("k")
		slices.Sort(vs)
		if err != nil || !slices.Equal(vs, []string{"a", "b"}) {
			t.Errorf("bag Lookup = %v, %v", vs, err)
		}
		return nil
	}))

	dupPath := filepath.Join(dir, "dup.dets")
	for range 3 {
		must(t, WithExclusiveDuplicateBag(dupPath, testOpts(), String, Bool, func(d *DuplicateBag[string, bool]) error {
			return d.Insert("k", true)
		}))
	}
	must(t, WithExclusiveDuplicateBag(dupPath, testOpts(), String, Bool, func(d *DuplicateBag[string, bool]) error {
		vs, err := d.Lookup("k")
		if err != nil || !slices.Equal(vs, []bool{true, true, true}) {
			t.Errorf("duplicate_bag Lookup = %v, %v", vs, err)
		}
		return nil
	}))

	// The file keeps its kind: a set session on the bag file fails to open.
	err := WithExclusiveSet(bagPath, testOpts(), String, String, func(*Set[string, string]) error {
		t.Error("callback ran on a file of the wrong kind")
		return nil
	})
	if !errors.Is(err, dets.ErrKindMismatch) {
		t.Fatalf("set session on a bag file: %v", err)
	}
}

// TestSessionCallbackErrorsKeepTheirIdentity: fn's errors come back through
// the session's wrapping.
func TestSessionCallbackErrorsKeepTheirIdentity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.dets")
	err := WithExclusiveSet(path, testOpts(), String, String, func(s *Set[string, string]) error {
		_, err := s.Lookup("absent")
		return err
	})
	var se *exclusive.SessionError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &se) || se.Stage != exclusive.CallbackFailure {
		t.Fatalf("got %v, want a callback failure matching ErrNotFound", err)
	}
}

func TestSessionRejectsBadOptionsBeforeLocking(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.dets")
	called := false
	fn := func(*Set[string, string]) error { called = true; return nil }

	opts := testOpts()
	opts.Table.KeyPos = 2
	if err := WithExclusiveSet(path, opts, String, String, fn); !errors.Is(err, ErrTableMismatch) {
		t.Errorf("KeyPos 2: %v", err)
	}
	opts = testOpts()
	opts.Table.Kind = dets.Bag
	if err := WithExclusiveSet(path, opts, String, String, fn); !errors.Is(err, ErrTableMismatch) {
		t.Errorf("Kind bag: %v", err)
	}
	if err := WithExclusiveSet(path, testOpts(), Codec[string]{}, String, fn); !errors.Is(err, ErrTableMismatch) {
		t.Errorf("zero codec: %v", err)
	}
	if called {
		t.Error("callback ran")
	}
	// Nothing was created: no data file and no sidecar.
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Errorf("files created: %v", m)
	}
}
