//go:build unix

package exclusive

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
	"golang.org/x/sys/unix"
)

// refuseUnderLock returns lock hooks under which the first attempt's
// BeforeFlock runs change, so that the checks under the lock refuse the
// lock it takes, and every LOCK_UN fails with EIO (the descriptor is
// still closed).
func refuseUnderLock(change func(sidecar string)) *lockfile.Hooks {
	done := false
	return &lockfile.Hooks{
		BeforeFlock: func(sidecar string) {
			if !done {
				done = true
				change(sidecar)
			}
		},
		Flock: func(fd, how int) error {
			if how == unix.LOCK_UN {
				return unix.EIO
			}
			return unix.Flock(fd, how)
		},
	}
}

// A lock refused by the checks under it (the sidecar or the data file
// changed between resolution and flock) is released unused. When that
// release fails, this process may still hold the lock: the session gives
// a *CleanupError whose Primary is what the refusal alone gives, logs,
// never opens the table, and later sessions on the file are quarantined.
func TestRecheckReleaseFailureQuarantines(t *testing.T) {
	for _, c := range []struct {
		name     string
		readOnly bool
		change   func(t *testing.T, path, sidecar string)
		undo     func(t *testing.T, path string) // before the later session
		primary  func(error) bool
	}{
		{
			name: "sidecar replaced",
			change: func(t *testing.T, _, sidecar string) {
				mustNot(t, os.Remove(sidecar))
				mustNot(t, os.WriteFile(sidecar, nil, 0o644))
			},
			primary: isAcquisition(ErrUnsafeAlias),
		},
		{
			name: "data hard-linked",
			change: func(t *testing.T, path, _ string) {
				mustNot(t, os.Link(path, path+".link"))
			},
			undo: func(t *testing.T, path string) {
				mustNot(t, os.Remove(path+".link"))
			},
			primary: isAcquisition(ErrUnsafeAlias),
		},
		{
			// A read-only session needs the data file; it went away.
			name:     "data removed",
			readOnly: true,
			change: func(t *testing.T, path, _ string) {
				mustNot(t, os.Remove(path))
			},
			primary: func(err error) bool {
				var se *SessionError
				return errors.As(err, &se) && se.Stage == OpenFailure && errors.Is(err, fs.ErrNotExist)
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := captureLog(t)
			path := filepath.Join(t.TempDir(), "t.dets")
			mustNot(t, os.WriteFile(path, nil, 0o644)) // never opened: any content
			h := refuseUnderLock(func(sidecar string) { c.change(t, path, sidecar) })
			ran := false
			err := With(path, Options{ReadOnly: c.readOnly, hooks: &testHooks{lock: h}}, func(*dets.Table) error { ran = true; return nil })
			var ce *CleanupError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCleanupFailed) || !errors.Is(err, unix.EIO) || len(ce.Failures) != 1 {
				t.Fatalf("want a cleanup failure wrapping EIO, got %v", err)
			}
			if !c.primary(ce.Primary) {
				t.Fatalf("unexpected primary %v", ce.Primary)
			}
			if Code(err) != "cleanup_failed" || CauseCode(err) != CauseCode(ce.Primary) {
				t.Fatalf("codes %s / %s, primary's cause %s", Code(err), CauseCode(err), CauseCode(ce.Primary))
			}
			if ran {
				t.Fatal("the callback ran")
			}
			if out := logs.String(); !strings.Contains(out, "event="+EventCleanupFailed) || !strings.Contains(out, "cause=return") {
				t.Fatalf("not logged: %s", out)
			}
			if c.undo != nil {
				c.undo(t, path)
			}
			err = With(path, Options{}, func(*dets.Table) error { ran = true; return nil })
			if !errors.Is(err, ErrQuarantined) || ran {
				t.Fatalf("later session: ran %v, err %v, want ErrQuarantined", ran, err)
			}
		})
	}
}

func isAcquisition(reason error) func(error) bool {
	return func(err error) bool {
		var ae *AcquisitionError
		return errors.As(err, &ae) && ae.Reason == reason
	}
}

func mustNot(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
