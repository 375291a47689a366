//go:build linux

package exclusive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/lockfile"
)

// fdsBesidesSidecars counts this process's descriptors, leaving out sidecar
// descriptors (parked ones come and go with a timer).
func fdsBesidesSidecars(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasSuffix(target, lockfile.SidecarSuffix) {
			continue
		}
		n++
	}
	return n
}

// Sessions that succeed and sessions that fail at every stage after the
// lock leave no descriptor behind: the data file descriptor the lock opened
// is closed by the table, by a failed open, or by the release.
func TestSessionsLeakNoDescriptors(t *testing.T) {
	dir := t.TempDir()
	path := newSet1000(t)
	garbage := filepath.Join(dir, "garbage.dets")
	if err := os.WriteFile(garbage, []byte("this is not a dets file at all, but long enough"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Warm up whatever the runtime opens once (the poller).
	if _, err := Do(path, Options{}, lookupOne); err != nil {
		t.Fatal(err)
	}
	before := fdsBesidesSidecars(t)
	mine := errors.New("callback failed")
	steps := []struct {
		name string
		run  func() error
		want error
	}{
		{"ok", func() error { _, err := Do(path, Options{}, lookupOne); return err }, nil},
		{"read-only", func() error { _, err := Do(path, Options{ReadOnly: true}, lookupOne); return err }, nil},
		{"new file", func() error {
			return With(filepath.Join(dir, "new.dets"), Options{}, func(*dets.Table) error { return nil })
		}, nil},
		{"callback error", func() error {
			return With(path, Options{}, func(*dets.Table) error { return mine })
		}, mine},
		{"panic", func() (err error) {
			defer func() {
				if recover() == nil {
					err = errors.New("no panic")
				}
			}()
			return With(path, Options{}, func(*dets.Table) error { panic("boom") })
		}, nil},
		{"open failure", func() error {
			return With(garbage, Options{}, func(*dets.Table) error { return nil })
		}, dets.ErrNotDETS},
		{"kind mismatch", func() error {
			return With(path, Options{Table: dets.Options{Kind: dets.Bag}}, func(*dets.Table) error { return nil })
		}, dets.ErrKindMismatch},
		{"busy", func() error {
			return With(path, Options{}, func(*dets.Table) error {
				return With(path, Options{}, func(*dets.Table) error { return nil })
			})
		}, ErrBusy},
		{"already open", func() error {
			tb, err := dets.Open(path, dets.Options{})
			if err != nil {
				return err
			}
			err = With(path, Options{}, func(*dets.Table) error { return nil })
			if cerr := tb.Close(); cerr != nil {
				return cerr
			}
			return err
		}, ErrAlreadyOpen},
	}
	for _, s := range steps {
		err := s.run()
		if s.want == nil && err != nil || s.want != nil && !errors.Is(err, s.want) {
			t.Fatalf("%s: got %v, want %v", s.name, err, s.want)
		}
		if after := fdsBesidesSidecars(t); after != before {
			t.Fatalf("%s: %d descriptors before, %d after", s.name, before, after)
		}
	}
}

// A read-write session opens the table on the descriptor the lock checked,
// not on the path again: with the file renamed away and garbage put at its
// name once the lock is held, the session still reads the real table. A
// read-only session opens by path and sees the garbage.
func TestReadWriteSessionUsesLockedDescriptor(t *testing.T) {
	path := newSet1000(t)
	for _, readOnly := range []bool{false, true} {
		hooks := &testHooks{afterAcquire: func() {
			mustNil(t, os.Rename(path, path+".real"))
			mustNil(t, os.WriteFile(path, []byte("garbage, not a dets file, long enough to read"), 0o644))
		}}
		_, err := Do(path, Options{ReadOnly: readOnly, hooks: hooks}, func(tb *dets.Table) (int, error) {
			objs, err := tb.Lookup(etf.Int(7))
			if err == nil && len(objs) != 1 {
				err = errors.New("lookup found nothing")
			}
			return 0, err
		})
		if readOnly {
			if !errors.Is(err, dets.ErrNotDETS) {
				t.Fatalf("read-only: got %v, want ErrNotDETS from the path", err)
			}
		} else if err != nil {
			t.Fatalf("read-write: %v", err)
		}
		mustNil(t, os.Rename(path+".real", path))
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Error(err)
	}
}
