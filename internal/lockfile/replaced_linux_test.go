//go:build linux

package lockfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitingAcquire starts Acquire(data) with opts in a goroutine and returns
// once its first lock attempt found the lock held (so the data path has
// been resolved), with a channel that gives the result.
type acquireResult struct {
	l   *Lock
	err error
}

func waitingAcquire(t *testing.T, data string, opts Options) <-chan acquireResult {
	t.Helper()
	tried := make(chan struct{})
	var once sync.Once
	opts.Hooks = &Hooks{BeforeFlock: func(string) { once.Do(func() { close(tried) }) }}
	res := make(chan acquireResult, 1)
	go func() {
		l, err := Acquire(data, opts)
		res <- acquireResult{l, err}
	}()
	select {
	case <-tried:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never tried the lock")
	}
	// Let the attempt reach flock and find the lock held.
	time.Sleep(20 * time.Millisecond)
	return res
}

func fileIno(t *testing.T, path string) uint64 {
	t.Helper()
	ino, _ := statIno(t, path)
	return ino
}

// Issue #16 item 8: the holder replaces the data file by renaming a new one
// over it (as a repair does) while another session waits. The waiter's lock
// is the right one for the new file, so it goes on with the new file
// instead of reporting an unsafe alias; with OpenData it is handed the new
// file's descriptor.
func TestDataRenamedOverWhileWaiting(t *testing.T) {
	for _, openData := range []bool{false, true} {
		dir := t.TempDir()
		data := newDataFile(t, dir, "t.dets")
		holder := mustAcquire(t, data, Options{})
		res := waitingAcquire(t, data, Options{Wait: 5 * time.Second, OpenData: openData})

		if err := os.WriteFile(data+".tmp", []byte("rebuilt"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(data+".tmp", data); err != nil {
			t.Fatal(err)
		}
		newIno := fileIno(t, data)
		mustUnlock(t, holder)

		r := <-res
		if r.err != nil {
			t.Fatalf("OpenData=%v: waiter after the rename: %v", openData, r.err)
		}
		id, ok := r.l.DataID()
		if !ok || id.Ino != newIno {
			t.Fatalf("OpenData=%v: DataID %v %v, the path names inode %d", openData, id, ok, newIno)
		}
		fd, size, ok := r.l.TakeDataFD()
		if ok != openData {
			t.Fatalf("OpenData=%v: descriptor %v", openData, ok)
		}
		if ok {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil || st.Ino != newIno || size != int64(len("rebuilt")) {
				t.Fatalf("descriptor names inode %d (size %d), want %d: %v", st.Ino, size, newIno, err)
			}
			unix.Close(fd)
		}
		mustUnlock(t, r.l)
	}
}

// The same replacement seen through the general re-check (a symlinked
// name, so not the canonical fast path), a data file the holder created,
// and one it removed: the waiter takes what is there now.
func TestDataChangedWhileWaitingGeneralPath(t *testing.T) {
	t.Run("renamed over via symlink", func(t *testing.T) {
		dir := t.TempDir()
		data := newDataFile(t, dir, "t.dets")
		link := filepath.Join(dir, "link.dets")
		mustDo(t, os.Symlink("t.dets", link))
		holder := mustAcquire(t, data, Options{})
		res := waitingAcquire(t, link, Options{Wait: 5 * time.Second})
		mustDo(t, os.WriteFile(data+".tmp", nil, 0o644))
		mustDo(t, os.Rename(data+".tmp", data))
		newIno := fileIno(t, data)
		mustUnlock(t, holder)
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if id, ok := r.l.DataID(); !ok || id.Ino != newIno || r.l.DataPath() != data {
			t.Fatalf("DataID %v %v path %s, want inode %d at %s", id, ok, r.l.DataPath(), newIno, data)
		}
		mustUnlock(t, r.l)
	})
	t.Run("created", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "t.dets")
		holder := mustAcquire(t, data, Options{})
		res := waitingAcquire(t, data, Options{Wait: 5 * time.Second})
		mustDo(t, os.WriteFile(data, nil, 0o644))
		mustUnlock(t, holder)
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if id, ok := r.l.DataID(); !ok || id.Ino != fileIno(t, data) {
			t.Fatalf("DataID %v %v: the created file was not taken", id, ok)
		}
		mustUnlock(t, r.l)
	})
	t.Run("removed", func(t *testing.T) {
		data := newDataFile(t, t.TempDir(), "t.dets")
		holder := mustAcquire(t, data, Options{})
		res := waitingAcquire(t, data, Options{Wait: 5 * time.Second})
		mustDo(t, os.Remove(data))
		mustUnlock(t, holder)
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if _, ok := r.l.DataID(); ok {
			t.Fatal("DataID of a removed file")
		}
		mustUnlock(t, r.l)
	})
}

// Real aliases that appear while a session waits are still refused: the
// path replaced by a file with a second link, by a directory, and the path
// re-pointed by a symlink to another file (whose sidecar is not the one
// locked). The sidecar replaced at every attempt ends as IdentityChanged.
func TestAliasWhileWaitingStillRefused(t *testing.T) {
	cases := []struct {
		name string
		kind AliasKind
		via  string // the name the waiter uses, relative to dir
		swap func(t *testing.T, data string)
	}{
		{"hard link renamed over", HardLinkedData, "t.dets", func(t *testing.T, data string) {
			mustDo(t, os.WriteFile(data+".new", nil, 0o644))
			mustDo(t, os.Link(data+".new", data+".also"))
			mustDo(t, os.Rename(data+".new", data))
		}},
		{"directory", NonRegularData, "t.dets", func(t *testing.T, data string) {
			mustDo(t, os.Remove(data))
			mustDo(t, os.Mkdir(data, 0o755))
		}},
		{"symlink re-pointed", IdentityChanged, "link.dets", func(t *testing.T, data string) {
			dir := filepath.Dir(data)
			mustDo(t, os.WriteFile(filepath.Join(dir, "other.dets"), nil, 0o644))
			mustDo(t, os.Remove(filepath.Join(dir, "link.dets")))
			mustDo(t, os.Symlink("other.dets", filepath.Join(dir, "link.dets")))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			data := newDataFile(t, dir, "t.dets")
			mustDo(t, os.Symlink("t.dets", filepath.Join(dir, "link.dets")))
			holder := mustAcquire(t, data, Options{})
			res := waitingAcquire(t, filepath.Join(dir, c.via), Options{Wait: 5 * time.Second, OpenData: true})
			c.swap(t, data)
			mustUnlock(t, holder)
			r := <-res
			if r.err == nil {
				r.l.Unlock()
			}
			wantAlias(t, r.err, c.kind)
		})
	}
	t.Run("sidecar replaced every time", func(t *testing.T) {
		data := newDataFile(t, t.TempDir(), "t.dets")
		h := &Hooks{BeforeFlock: func(side string) {
			mustDo(t, os.Remove(side))
			mustDo(t, os.WriteFile(side, nil, 0o644))
		}}
		_, err := Acquire(data, Options{Hooks: h})
		wantAlias(t, err, IdentityChanged)
	})
}

// Issue #16 item 10: ExistingOnly on a missing data file creates nothing,
// locks nothing, and fails with a not-exist error; with the sidecar left
// by an earlier session it locks, re-checks and fails the same way.
func TestExistingOnlyMissingData(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "t.dets")
	_, err := Acquire(data, Options{ExistingOnly: true, Wait: time.Second})
	var me *MissingError
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrNoDataFile) || !errors.As(err, &me) || me.Path != data {
		t.Fatalf("want MissingError for %s, got %v", data, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("directory not empty: %v", ents)
	}
	// A read-write caller creates the sidecar (not the data file).
	mustUnlock(t, mustAcquire(t, data, Options{}))
	closeParked()
	side, _ := statIno(t, data+SidecarSuffix)
	if _, err := Acquire(data, Options{ExistingOnly: true}); !errors.Is(err, ErrNoDataFile) {
		t.Fatalf("with a sidecar: %v", err)
	}
	if now, _ := statIno(t, data+SidecarSuffix); now != side {
		t.Fatal("sidecar replaced")
	}
	// An existing data file is locked as usual, also on its first session.
	mustDo(t, os.WriteFile(filepath.Join(dir, "b.dets"), nil, 0o644))
	mustUnlock(t, mustAcquire(t, filepath.Join(dir, "b.dets"), Options{ExistingOnly: true}))
	if _, err := os.Lstat(filepath.Join(dir, "b.dets"+SidecarSuffix)); err != nil {
		t.Fatalf("no sidecar for an existing file: %v", err)
	}
}

// ExistingOnly waiting for a holder that creates the file gets it, and one
// waiting for a holder that removes it fails as missing.
func TestExistingOnlyWhileWaiting(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "t.dets")
	holder := mustAcquire(t, data, Options{})
	res := waitingAcquire(t, data, Options{ExistingOnly: true, Wait: 5 * time.Second})
	mustDo(t, os.WriteFile(data, nil, 0o644))
	mustUnlock(t, holder)
	r := <-res
	if r.err != nil {
		t.Fatalf("file created by the holder: %v", r.err)
	}
	mustUnlock(t, r.l)

	holder = mustAcquire(t, data, Options{})
	res = waitingAcquire(t, data, Options{ExistingOnly: true, Wait: 5 * time.Second})
	mustDo(t, os.Remove(data))
	mustUnlock(t, holder)
	r = <-res
	if !errors.Is(r.err, ErrNoDataFile) {
		if r.err == nil {
			r.l.Unlock()
		}
		t.Fatalf("file removed by the holder: %v", r.err)
	}
	mustUnlock(t, mustAcquire(t, data, Options{})) // released
}
