package lockfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tests of the Windows lease. They run on Windows only; this project's
// machine builds and vets them (Go 1.26 Windows binaries do not start
// under Wine 8), so they are written to be read as well as run.

func TestWindowsLockExcludesAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	l, err := Acquire(path, Options{})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	// Another session of this process, through another spelling of the
	// path, is refused like another process.
	other := filepath.Join(strings.ToUpper(dir), "T.DETS")
	if _, err := Acquire(other, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Acquire: %v, want ErrBusy", err)
	}
	start := time.Now()
	if _, err := Acquire(path, Options{Wait: 100 * time.Millisecond}); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("waiting Acquire: %v, want ErrTimedOut", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("timed out after %v, before the wait ended", d)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the lock left files: %v", ents)
	}
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := l.Unlock(); !errors.Is(err, ErrReleased) {
		t.Fatalf("second Unlock: %v, want ErrReleased", err)
	}
	l2, err := Acquire(other, Options{})
	if err != nil {
		t.Fatalf("Acquire after Unlock: %v", err)
	}
	if l2.ID() != l.ID() {
		t.Fatalf("IDs %v and %v for one file", l.ID(), l2.ID())
	}
	if err := l2.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestWindowsDeadHolderFreesTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	child := startHolder(t, path)
	if _, err := Acquire(path, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Acquire beside the holder: %v, want ErrBusy", err)
	}
	// A waiter keeps no handle between polls, so the semaphore dies with
	// the holder's handle and the waiter gets a fresh one.
	done := make(chan error, 1)
	go func() {
		l, err := Acquire(path, Options{Wait: 5 * time.Second})
		if err == nil {
			err = l.Unlock()
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := child.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
}

func TestWindowsRefusals(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "t.dets")
	if err := os.WriteFile(data, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "hard.dets")
	if err := os.Link(data, link); err != nil {
		t.Fatal(err)
	}
	var ae *AliasError
	if _, err := Acquire(data, Options{}); !errors.As(err, &ae) || ae.Kind != HardLinkedData {
		t.Fatalf("hard-linked data: %v", err)
	}
	if _, err := Acquire(dir, Options{}); !errors.As(err, &ae) || ae.Kind != NonRegularData {
		t.Fatalf("directory: %v", err)
	}
	if _, err := Acquire(filepath.Join(dir, "NUL"), Options{}); !errors.As(err, &ae) || ae.Kind != NonRegularData {
		t.Fatalf("device: %v", err)
	}
	if _, err := Acquire(filepath.Join(dir, "t.dets:stream"), Options{}); !errors.As(err, &ae) || ae.Kind != InvalidName {
		t.Fatalf("alternate data stream: %v", err)
	}
	var fe *FilesystemError
	for _, p := range []string{`\\server\share\t.dets`, `\\?\UNC\server\share\t.dets`} {
		if _, err := Acquire(p, Options{}); !errors.As(err, &fe) || !errors.Is(err, ErrUnsupportedFilesystem) {
			t.Fatalf("%s: %v, want ErrUnsupportedFilesystem", p, err)
		}
	}
	remote := &Hooks{FSType: func(uint32) uint32 { return 4 }} // DRIVE_REMOTE
	if _, err := Acquire(filepath.Join(dir, "new.dets"), Options{Hooks: remote}); !errors.As(err, &fe) || fe.Magic != 4 {
		t.Fatalf("network drive: %v", err)
	}
	if _, err := Acquire(filepath.Join(dir, "missing.dets"), Options{ExistingOnly: true}); !errors.Is(err, ErrNoDataFile) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("ExistingOnly, no file: %v", err)
	}
	dangling := filepath.Join(dir, "dangling.dets")
	if err := os.Symlink(filepath.Join(dir, "nothing"), dangling); err != nil {
		t.Logf("no symlink (needs developer mode or a privilege): %v", err)
		return
	}
	if _, err := Acquire(dangling, Options{}); !errors.As(err, &ae) || ae.Kind != DanglingSymlink {
		t.Fatalf("dangling symlink: %v", err)
	}
}

// A file created by an earlier holder under another case is opened by its
// stored name, and locked under the same name as before it existed.
func TestWindowsResolutionTakesTheStoredName(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(filepath.Join(dir, "t.dets"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := l.ID()
	if err := os.WriteFile(filepath.Join(dir, "T.DETS"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l, err = Acquire(filepath.Join(dir, "t.dets"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if l.ID() != before {
		t.Fatalf("lock ID %v once the file exists, %v before", l.ID(), before)
	}
	if got := filepath.Base(l.DataPath()); got != "T.DETS" {
		t.Fatalf("DataPath %s, want the stored name T.DETS", l.DataPath())
	}
	if _, ok := l.DataID(); !ok {
		t.Fatal("no DataID for an existing file")
	}
}

// A count taken after the deadline, however slightly, is given back. The
// deadline is taken before BeforeFlock runs, so a wait on the semaphore
// that starts once the wait is over ends after it.
func TestWindowsLateAcquisitionReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	const wait = 30 * time.Millisecond
	late := &Hooks{BeforeFlock: func(string) { time.Sleep(wait + time.Millisecond) }}
	l, err := Acquire(path, Options{Wait: wait, Hooks: late})
	if err == nil {
		l.Unlock()
		t.Fatal("a count taken after the deadline was kept")
	}
	if !errors.Is(err, ErrTimedOut) {
		t.Fatalf("want ErrTimedOut, got %v", err)
	}
	l, err = Acquire(path, Options{})
	if err != nil {
		t.Fatalf("the late count was not given back: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// A late count whose release fails gives a *LateReleaseError, which
// matches ErrTimedOut and the failure. Nothing fails ReleaseSemaphore on
// demand, so Options.ReleaseUnused injects the failure after a real release.
func TestWindowsLateReleaseFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	const wait = 30 * time.Millisecond
	late := &Hooks{BeforeFlock: func(string) { time.Sleep(wait + time.Millisecond) }}
	injected := errors.New("injected release failure")
	release := func(l *Lock) error {
		if err := l.Unlock(); err != nil {
			return err
		}
		return injected
	}
	_, err := Acquire(path, Options{Wait: wait, Hooks: late, ReleaseUnused: release})
	var le *LateReleaseError
	if !errors.As(err, &le) || !errors.Is(err, ErrTimedOut) || !errors.Is(err, injected) {
		t.Fatalf("want a *LateReleaseError matching ErrTimedOut, got %v", err)
	}
	l, err := Acquire(path, Options{})
	if err != nil {
		t.Fatalf("the late count was not given back: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// A count the check under the lock refuses (the data file gained a hard
// link once resolved), and whose release fails, gives a
// *RecheckReleaseError matching the refusal and the failure, not the
// refusal alone. As above, Options.ReleaseUnused injects the failure
// after a real release.
func TestWindowsRecheckReleaseFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	linked := false
	h := &Hooks{BeforeFlock: func(string) {
		if !linked {
			linked = true
			if err := os.Link(path, path+".link"); err != nil {
				t.Error(err)
			}
		}
	}}
	injected := errors.New("injected release failure")
	calls := 0
	release := func(l *Lock) error {
		calls++
		if err := l.Unlock(); err != nil {
			return err
		}
		return injected
	}
	_, err := Acquire(path, Options{Hooks: h, ReleaseUnused: release})
	var re *RecheckReleaseError
	var ae *AliasError
	if !errors.As(err, &re) || !errors.As(err, &ae) || ae.Kind != HardLinkedData || !errors.Is(err, injected) || calls != 1 {
		t.Fatalf("want a *RecheckReleaseError of a hard-linked data file, released once, got %v (%d releases)", err, calls)
	}
	if err := os.Remove(path + ".link"); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(path, Options{})
	if err != nil {
		t.Fatalf("the refused count was not given back: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}
