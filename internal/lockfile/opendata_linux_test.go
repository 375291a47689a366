package lockfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openFDCount counts this process's open descriptors, after closing the
// parked sidecar descriptors so that they do not blur the count (and after
// waiting for kernel waiters of earlier tests, which park theirs).
func openFDCount(t *testing.T) int {
	t.Helper()
	waitNoBlocked(t)
	closeParked()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// checkDataFD asserts that f is a writable descriptor of the file at path.
func checkDataFD(t *testing.T, f *os.File, path string) {
	t.Helper()
	if f == nil {
		t.Fatal("no data file descriptor")
	}
	if f.Name() != path {
		t.Fatalf("name %q, want %q", f.Name(), path)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(fi, pi) {
		t.Fatal("descriptor is not the data file")
	}
	if _, err := f.WriteAt([]byte("x"), 0); err != nil {
		t.Fatalf("descriptor not writable: %v", err)
	}
}

// With OpenData, the re-check hands out a read-write descriptor of an
// existing data file exactly once, through both the canonical fast path
// and the general (symlinked name) path.
func TestOpenDataTakesDescriptor(t *testing.T) {
	dir := t.TempDir()
	data := newDataFile(t, dir, "t.dets")
	if err := os.WriteFile(data, []byte("12345"), 0o644); err != nil { // a size to report
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.dets")
	if err := os.Symlink("t.dets", link); err != nil {
		t.Fatal(err)
	}
	before := openFDCount(t)
	for _, name := range []string{data, link} {
		l := mustAcquire(t, name, Options{OpenData: true})
		fd, size, ok := l.TakeDataFD()
		if !ok {
			t.Fatal("no descriptor")
		}
		f := os.NewFile(uintptr(fd), data)
		if fi, err := f.Stat(); err != nil || fi.Size() != size {
			t.Fatalf("TakeDataFD gave size %d, the file has %v (err %v)", size, fi.Size(), err)
		}
		checkDataFD(t, f, data) // writes a byte
		if _, _, ok := l.TakeDataFD(); ok {
			t.Fatal("second TakeDataFD returned a descriptor")
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		mustUnlock(t, l)
	}
	if after := openFDCount(t); after != before {
		t.Fatalf("descriptors: %d before, %d after", before, after)
	}
}

// Without OpenData, or without a data file, there is no descriptor.
func TestOpenDataOnlyWhenAskedAndExisting(t *testing.T) {
	dir := t.TempDir()
	data := newDataFile(t, dir, "t.dets")
	l := mustAcquire(t, data, Options{})
	if _, _, ok := l.TakeDataFD(); ok {
		t.Fatal("descriptor without OpenData")
	}
	mustUnlock(t, l)
	l = mustAcquire(t, filepath.Join(dir, "new.dets"), Options{OpenData: true})
	if _, _, ok := l.TakeDataFD(); ok {
		t.Fatal("descriptor for a missing data file")
	}
	mustUnlock(t, l)
	if _, err := os.Stat(filepath.Join(dir, "new.dets")); !os.IsNotExist(err) {
		t.Fatalf("data file created by the lock: %v", err)
	}
}

// A descriptor that is never taken is closed by Unlock, and cannot be
// taken afterwards.
func TestOpenDataUntakenClosedByUnlock(t *testing.T) {
	data := newDataFile(t, t.TempDir(), "t.dets")
	before := openFDCount(t)
	l := mustAcquire(t, data, Options{OpenData: true})
	if n := len(sidecarFDs(t, data)); n != 1 {
		t.Fatalf("%d descriptors on the data file under the lock, want 1", n)
	}
	mustUnlock(t, l)
	if _, _, ok := l.TakeDataFD(); ok {
		t.Fatal("descriptor taken after Unlock")
	}
	if n := len(sidecarFDs(t, data)); n != 0 {
		t.Fatalf("%d descriptors on the data file after Unlock", n)
	}
	if after := openFDCount(t); after != before {
		t.Fatalf("descriptors: %d before, %d after", before, after)
	}
}

// The data file is replaced between resolution and the re-check: by a FIFO
// (the O_RDWR open must not block), by a hard-linked file, given a second
// link, and by a bind mount of itself. Each is refused, and no descriptor
// survives. (A plain new file is accepted: replaced_linux_test.go.)
func TestOpenDataSwappedUnderLock(t *testing.T) {
	cases := []struct {
		name string
		kind AliasKind
		swap func(t *testing.T, data string)
	}{
		{"fifo", NonRegularData, func(t *testing.T, data string) {
			mustDo(t, os.Remove(data))
			mustDo(t, unix.Mkfifo(data, 0o644))
		}},
		{"hard-linked file renamed over it", HardLinkedData, func(t *testing.T, data string) {
			// A replacement (see replaced_linux_test.go) that is an alias.
			mustDo(t, os.WriteFile(data+".new", nil, 0o644))
			mustDo(t, os.Link(data+".new", data+".other"))
			mustDo(t, os.Rename(data+".new", data))
		}},
		{"hard link", HardLinkedData, func(t *testing.T, data string) {
			mustDo(t, os.Link(data, data+".2"))
		}},
		{"self bind mount", MountPoint, func(t *testing.T, data string) {
			mountOrSkip(t, data, data, "", unix.MS_BIND, "")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, openData := range []bool{true, false} {
				data := newDataFile(t, t.TempDir(), "t.dets")
				tg, err := Resolve(data, nil)
				if err != nil {
					t.Fatal(err)
				}
				c.swap(t, data)
				before := openFDCount(t)
				start := time.Now()
				l, err := tg.Acquire(Options{OpenData: openData})
				if d := time.Since(start); d > 2*time.Second {
					t.Fatalf("re-check took %v", d)
				}
				if err == nil {
					l.Unlock()
				}
				wantAlias(t, err, c.kind)
				if after := openFDCount(t); after != before {
					t.Fatalf("OpenData=%v: descriptors %d before, %d after", openData, before, after)
				}
			}
		})
	}
}
