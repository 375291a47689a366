//go:build linux

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// refuseThenFailRelease returns hooks under which the first attempt's
// BeforeFlock runs change (so that the checks under the lock refuse it)
// and every LOCK_UN fails with EIO, after which Unlock still closes the
// descriptor.
func refuseThenFailRelease(change func(sidecar string)) *Hooks {
	done := false
	return &Hooks{
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

// A lock the checks under it refuse, and whose release then fails, ends
// the acquisition (no retry) with a *RecheckReleaseError: it matches what
// the refusal matches and the release's error, and names the file, so the
// caller learns that this process may still hold the lock. The release
// goes through Options.ReleaseUnused and never parks the descriptor.
func TestRecheckReleaseFailure(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, data, sidecar string)
		kind   AliasKind
	}{
		{"sidecar replaced", func(t *testing.T, _, sidecar string) {
			mustDo(t, os.Remove(sidecar))
			mustDo(t, os.WriteFile(sidecar, nil, 0o644))
		}, IdentityChanged},
		{"data hard-linked", func(t *testing.T, data, _ string) {
			mustDo(t, os.Link(data, data+".link"))
		}, HardLinkedData},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, err := filepath.EvalSymlinks(t.TempDir())
			mustDo(t, err)
			data := newDataFile(t, dir, "t.dets")
			h := refuseThenFailRelease(func(sidecar string) { c.change(t, data, sidecar) })
			var got []*Lock
			release := func(l *Lock) error { got = append(got, l); return l.Unlock() }
			_, err = Acquire(data, Options{Hooks: h, ReleaseUnused: release})
			var re *RecheckReleaseError
			var ae *AliasError
			if !errors.As(err, &re) || !errors.As(err, &ae) || ae.Kind != c.kind || !errors.Is(err, ErrUnsafeAlias) || !errors.Is(err, unix.EIO) {
				t.Fatalf("want a *RecheckReleaseError of %v and EIO, got %v", c.kind, err)
			}
			for _, s := range []error{ErrBusy, ErrTimedOut, ErrUnsupportedFilesystem, ErrReleased} {
				if errors.Is(err, s) {
					t.Fatalf("%v also matches %v", err, s)
				}
			}
			if re.Path != data || len(got) != 1 || got[0].DataPath() != data {
				t.Fatalf("Path %s, ReleaseUnused called %d times; want %s once", re.Path, len(got), data)
			}
			if isParked(data) {
				t.Fatal("the refused descriptor was parked")
			}
			// The failed LOCK_UN closed the descriptor (on the replaced
			// sidecar too, which the kernel now names "... (deleted)").
			side := data + SidecarSuffix
			if fds := append(sidecarFDs(t, side), sidecarFDs(t, side+" (deleted)")...); len(fds) != 0 {
				t.Fatalf("descriptors %v still open on the sidecar", fds)
			}
		})
	}
}
