//go:build linux

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godets/godets/internal/testutil"
)

// closeParked closes every parked descriptor now, so a test starts from a
// known state.
func closeParked() {
	parked.Lock()
	m := parked.m
	parked.m = nil
	if parked.timer != nil {
		parked.timer.Stop()
	}
	parked.armed = false
	parked.Unlock()
	for _, p := range m {
		_ = closeFD(p.fd)
	}
}

// sidecarFDs lists this process's descriptors open on path.
func sidecarFDs(t *testing.T, path string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	var out []string
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			out = append(out, e.Name())
		}
	}
	return out
}

// newDataFile creates an empty data file and returns its path.
func newDataFile(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A released lock parks its descriptor unlocked: another process (flock(1))
// and another descriptor can take the lock, and the next session on the
// file reuses the descriptor.
func TestParkedDescriptorReusedAndUnlocked(t *testing.T) {
	closeParked()
	data := newDataFile(t, t.TempDir(), "t.dets")
	l := mustAcquire(t, data, Options{})
	fd := l.fd
	mustUnlock(t, l)
	if got := sidecarFDs(t, l.SidecarPath()); !slices.Equal(got, []string{strconv.Itoa(fd)}) {
		t.Fatalf("parked descriptors %v, want [%d]", got, fd)
	}
	ino, _ := statIno(t, l.SidecarPath())
	if procLocksHas(t, os.Getpid(), ino) {
		t.Fatal("parked descriptor still holds the lock in /proc/locks")
	}
	if fl := testutil.RequireCommand(t, "flock", "util-linux"); fl != "" {
		if code := testutil.TryFlock(t, fl, l.SidecarPath()); code != 0 {
			t.Fatalf("flock(1) could not take a parked sidecar: exit %d", code)
		}
	}
	l2 := mustAcquire(t, data, Options{})
	if l2.fd != fd {
		t.Fatalf("fresh descriptor %d, parked one was %d", l2.fd, fd)
	}
	if _, err := Acquire(data, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("reused descriptor does not exclude: %v", err)
	}
	mustUnlock(t, l2)
}

// A sidecar replaced or deleted between sessions: the parked descriptor
// fails the check under the lock and the session locks the inode the path
// now names.
func TestParkedSidecarReplacedBetweenSessions(t *testing.T) {
	for _, recreate := range []bool{true, false} {
		closeParked()
		data := newDataFile(t, t.TempDir(), "t.dets")
		side := data + SidecarSuffix
		l := mustAcquire(t, data, Options{})
		old := l.ID()
		mustUnlock(t, l)
		if err := os.Remove(side); err != nil {
			t.Fatal(err)
		}
		if recreate {
			if err := os.WriteFile(side, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		l2 := mustAcquire(t, data, Options{})
		ino, _ := statIno(t, side)
		// Without a recreation the kernel may give the new file the
		// freed inode number, so only a recreation shows a new ID.
		if l2.ID().Ino != ino || (recreate && l2.ID() == old) {
			t.Fatalf("recreate=%v: locked %v, path names inode %d, old %v", recreate, l2.ID(), ino, old)
		}
		if _, err := Acquire(data, Options{}); !errors.Is(err, ErrBusy) {
			t.Fatalf("recreate=%v: new inode not locked: %v", recreate, err)
		}
		mustUnlock(t, l2)
		// The stale descriptor was closed, not parked again.
		if n := len(sidecarFDs(t, side)); n != 1 {
			t.Fatalf("recreate=%v: %d descriptors open on the sidecar", recreate, n)
		}
	}
}

// A sidecar turned into an alias between sessions is refused by the name
// checks of the fresh open that follows the parked descriptor's failure.
func TestParkedSidecarBecomesAlias(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, side string)
		kind AliasKind
	}{
		{"symlink", func(t *testing.T, side string) {
			mustDo(t, os.Rename(side, side+".real"))
			mustDo(t, os.Symlink(side+".real", side))
		}, SymlinkSidecar},
		{"hard link", func(t *testing.T, side string) {
			mustDo(t, os.Link(side, side+".other"))
		}, HardLinkedSidecar},
		{"fifo", func(t *testing.T, side string) {
			mustDo(t, os.Remove(side))
			mustDo(t, unix.Mkfifo(side, 0o644))
		}, NonRegularSidecar},
		{"directory", func(t *testing.T, side string) {
			mustDo(t, os.Remove(side))
			mustDo(t, os.Mkdir(side, 0o755))
		}, NonRegularSidecar},
	}
	for _, c := range cases {
		closeParked()
		data := newDataFile(t, t.TempDir(), "t.dets")
		mustUnlock(t, mustAcquire(t, data, Options{}))
		c.make(t, data+SidecarSuffix)
		start := time.Now()
		_, err := Acquire(data, Options{})
		var ae *AliasError
		if !errors.As(err, &ae) || ae.Kind != c.kind {
			t.Fatalf("%s: got %v, want %v", c.name, err, c.kind)
		}
		if el := time.Since(start); el > time.Second {
			t.Fatalf("%s: took %v (blocked on open?)", c.name, el)
		}
		if n := len(sidecarFDs(t, data+SidecarSuffix)); n != 0 {
			t.Fatalf("%s: %d descriptors left open", c.name, n)
		}
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A data file hard-linked between sessions is refused before any flock,
// although the path has a parked descriptor (the tentative resolution).
func TestParkedDataHardLinkedRefused(t *testing.T) {
	closeParked()
	dir := t.TempDir()
	data := newDataFile(t, dir, "t.dets")
	mustUnlock(t, mustAcquire(t, data, Options{}))
	mustDo(t, os.Link(data, filepath.Join(dir, "u.dets")))
	wantAliasBeforeFlock(t, data, HardLinkedData)
}

// The filesystem verdict of a parked descriptor is asked again (here the
// second FSType call, the sidecar's, says NFS), before any flock.
func TestParkedSidecarFSJudged(t *testing.T) {
	closeParked()
	data := newDataFile(t, t.TempDir(), "t.dets")
	mustUnlock(t, mustAcquire(t, data, Options{}))
	calls := 0
	var flocks atomic.Int32
	h := &Hooks{
		FSType: func(m uint32) uint32 {
			calls++
			if calls > 1 {
				return 0x6969
			}
			return m
		},
		Flock: func(fd, how int) error { flocks.Add(1); return unix.Flock(fd, how) },
	}
	if _, err := Acquire(data, Options{Hooks: h}); !errors.Is(err, ErrUnsupportedFilesystem) || calls != 2 {
		t.Fatalf("calls=%d err=%v", calls, err)
	}
	if flocks.Load() != 0 {
		t.Fatal("flock called")
	}
}

// repointAfterSession runs a session on root/sub/t.dets (parking its
// descriptor), then moves sub to real and makes sub a symlink to it. It
// returns the old data path and the new resolved one.
func repointAfterSession(t *testing.T) (data, want string) {
	t.Helper()
	closeParked()
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	mustDo(t, os.Mkdir(sub, 0o755))
	data = newDataFile(t, sub, "t.dets")
	mustUnlock(t, mustAcquire(t, data, Options{}))
	real := filepath.Join(root, "real")
	mustDo(t, os.Rename(sub, real))
	mustDo(t, os.Symlink("real", sub))
	return data, filepath.Join(real, "t.dets")
}

// A directory of the path re-pointed through a symlink between sessions:
// the tentative resolution fails under the lock, the path is resolved
// again, Refuse is asked about the new path, and the session locks the
// sidecar next to the real file.
func TestParkedPathRepointed(t *testing.T) {
	data, want := repointAfterSession(t)
	var asked []string
	refuse := func(p string) error { asked = append(asked, p); return nil }
	l := mustAcquire(t, data, Options{Refuse: refuse})
	if l.DataPath() != want || l.SidecarPath() != want+SidecarSuffix {
		t.Fatalf("locked %q / %q, want %q", l.DataPath(), l.SidecarPath(), want)
	}
	if !slices.Equal(asked, []string{data, want}) {
		t.Fatalf("Refuse asked about %q", asked)
	}
	if _, err := Acquire(want, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("real path not excluded: %v", err)
	}
	mustUnlock(t, l)
}

// Refuse refusing the path found by the second resolution ends the
// acquisition with its error and leaves nothing locked.
func TestParkedPathRepointedRefused(t *testing.T) {
	data, want := repointAfterSession(t)
	mine := errors.New("refused")
	refuse := func(p string) error {
		if p == want {
			return mine
		}
		return nil
	}
	if _, err := Acquire(data, Options{Refuse: refuse}); !errors.Is(err, mine) {
		t.Fatalf("got %v", err)
	}
	mustUnlock(t, mustAcquire(t, want, Options{}))
}

// The same re-pointing during an acquisition that follows a parked session
// never yields a lock whose data path is the stale one.
func TestParkedDirSwappedDuringAcquire(t *testing.T) {
	closeParked()
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	mustDo(t, os.Mkdir(sub, 0o755))
	data := newDataFile(t, sub, "t.dets")
	mustUnlock(t, mustAcquire(t, data, Options{}))
	var once sync.Once
	h := &Hooks{BeforeFlock: func(string) {
		once.Do(func() {
			real := filepath.Join(root, "real")
			if err := os.Rename(sub, real); err != nil {
				t.Error(err)
			}
			if err := os.Symlink("real", sub); err != nil {
				t.Error(err)
			}
		})
	}}
	l, err := Acquire(data, Options{Hooks: h})
	if err != nil {
		var ae *AliasError
		if !errors.As(err, &ae) || ae.Kind != IdentityChanged {
			t.Fatalf("got %v", err)
		}
		return
	}
	defer mustUnlock(t, l)
	if l.DataPath() == data {
		t.Fatalf("locked the stale path %q", data)
	}
}

// Behaviour 13 with parked descriptors in play: many goroutines taking and
// releasing one file's lock never hold it at the same time.
func TestParkedNeverShared(t *testing.T) {
	closeParked()
	data := newDataFile(t, t.TempDir(), "t.dets")
	var holders, maxHolders, wins atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				l, err := Acquire(data, Options{})
				if errors.Is(err, ErrBusy) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				n := holders.Add(1)
				for {
					m := maxHolders.Load()
					if n <= m || maxHolders.CompareAndSwap(m, n) {
						break
					}
				}
				wins.Add(1)
				holders.Add(-1)
				if err := l.Unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if maxHolders.Load() != 1 || wins.Load() == 0 {
		t.Fatalf("max concurrent holders %d, wins %d", maxHolders.Load(), wins.Load())
	}
	if n := len(sidecarFDs(t, data+SidecarSuffix)); n > 1 {
		t.Fatalf("%d descriptors left open", n)
	}
}

// Idle parked descriptors are closed by the sweep, and at most maxParked
// are kept.
func TestParkedSweepAndCap(t *testing.T) {
	closeParked()
	old := parkIdle
	parkIdle = 10 * time.Millisecond
	t.Cleanup(func() { parkIdle = old })
	dir := t.TempDir()
	var sides []string
	for i := range maxParked + 4 {
		data := newDataFile(t, dir, "t"+strconv.Itoa(i)+".dets")
		l := mustAcquire(t, data, Options{})
		sides = append(sides, l.SidecarPath())
		mustUnlock(t, l)
	}
	open := 0
	for _, s := range sides {
		open += len(sidecarFDs(t, s))
	}
	if open > maxParked {
		t.Fatalf("%d descriptors parked, cap %d", open, maxParked)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		open = 0
		for _, s := range sides {
			open += len(sidecarFDs(t, s))
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle descriptors still open", open)
		}
		time.Sleep(10 * time.Millisecond)
	}
	parked.Lock()
	armed, n := parked.armed, len(parked.m)
	parked.Unlock()
	if armed || n != 0 {
		t.Fatalf("after the sweep: armed=%v parked=%d", armed, n)
	}
}

// A Close hook sees every descriptor closed at Unlock (no parking), so
// behaviours 44 and 45 stay observable.
func TestCloseHookDisablesParking(t *testing.T) {
	closeParked()
	data := newDataFile(t, t.TempDir(), "t.dets")
	mustUnlock(t, mustAcquire(t, data, Options{})) // parks one
	var closed []int
	h := &Hooks{Close: func(fd int) error { closed = append(closed, fd); return unix.Close(fd) }}
	l := mustAcquire(t, data, Options{Hooks: h})
	fd := l.fd
	mustUnlock(t, l)
	if !slices.Equal(closed, []int{fd}) {
		t.Fatalf("closed %v, want [%d]", closed, fd)
	}
	if n := len(sidecarFDs(t, data+SidecarSuffix)); n != 0 {
		t.Fatalf("%d descriptors left open", n)
	}
}

// Root only: a file bind-mounted over the sidecar, or the sidecar mounted
// over itself, between sessions is refused as a mount point; so is a file
// mounted over the data path.
func TestParkedMountedOver(t *testing.T) {
	closeParked()
	dir := t.TempDir()
	data := newDataFile(t, dir, "t.dets")
	side := data + SidecarSuffix
	mustUnlock(t, mustAcquire(t, data, Options{}))
	other := newDataFile(t, dir, "other")
	mountOrSkip(t, other, side, "", unix.MS_BIND, "")
	_, err := Acquire(data, Options{})
	wantAlias(t, err, MountPoint)
	mustDo(t, unix.Unmount(side, unix.MNT_DETACH))

	closeParked()
	mustUnlock(t, mustAcquire(t, data, Options{}))
	mountOrSkip(t, side, side, "", unix.MS_BIND, "")
	_, err = Acquire(data, Options{})
	wantAlias(t, err, MountPoint)
	mustDo(t, unix.Unmount(side, unix.MNT_DETACH))

	closeParked()
	mustUnlock(t, mustAcquire(t, data, Options{}))
	mountOrSkip(t, other, data, "", unix.MS_BIND, "")
	wantAliasBeforeFlock(t, data, MountPoint)
}
