//go:build linux

package lockfile

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWalkAgreesWithOpenat2: the portable symlink-free walk, which macOS
// and FreeBSD use, gives openat2(RESOLVE_NO_SYMLINKS)'s answer on every
// kind of path: resolved files, symlinks anywhere in the path, missing
// files, relative and unclean paths.
func TestWalkAgreesWithOpenat2(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "dir")
	file := filepath.Join(dir, "t.dets")
	mustDo(t, os.Mkdir(dir, 0o755))
	mustDo(t, os.WriteFile(file, []byte("x"), 0o644))
	mustDo(t, os.Symlink(dir, filepath.Join(root, "dirlink")))
	mustDo(t, os.Symlink(file, filepath.Join(dir, "filelink")))
	mustDo(t, os.Symlink(filepath.Join(dir, "none"), filepath.Join(dir, "dangling")))
	mustDo(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	if _, ok := statCanonical(nil, file); !ok || noOpenat2.Load() {
		t.Skip("no openat2 to compare with")
	}
	for _, p := range []string{
		file,
		dir,
		filepath.Join(root, "dirlink", "t.dets"),
		filepath.Join(dir, "filelink"),
		filepath.Join(dir, "dangling"),
		filepath.Join(dir, "missing"),
		filepath.Join(dir, "fifo"),
		filepath.Join(root, "dirlink"),
		dir + "/../dir/t.dets",
		"dir/t.dets",
		"/",
	} {
		want, wantOK := statCanonical(nil, p)
		got, gotOK := walkStat(p)
		if gotOK != wantOK || got.id != want.id || got.mode != want.mode || got.nlink != want.nlink || got.size != want.size {
			t.Errorf("%s: walk %+v %v, openat2 %+v %v", p, got, gotOK, want, wantOK)
		}
	}

	// walkOpen keeps a blocking read-write descriptor of a regular file
	// only: the FIFO is neither kept nor waited for.
	fd, st, ok := walkOpen(file, dataOpenFlags)
	if !ok || st.size != 1 {
		t.Fatalf("walkOpen(%s): %v %+v", file, ok, st)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK != 0 || fl&unix.O_ACCMODE != unix.O_RDWR {
		t.Errorf("descriptor flags %#x %v: want read-write, blocking", fl, err)
	}
	unix.Close(fd)
	for _, p := range []string{filepath.Join(dir, "fifo"), filepath.Join(dir, "filelink"), filepath.Join(root, "dirlink", "t.dets"), dir} {
		if fd, _, ok := walkOpen(p, dataOpenFlags); ok {
			unix.Close(fd)
			t.Errorf("walkOpen(%s) kept a descriptor", p)
		}
	}
}

// Without openat2 (kernels before 5.6, seccomp filters, qemu-user) the
// portable walk answers the fast path and gives OpenData its descriptor,
// as on macOS and FreeBSD.
func TestWithoutOpenat2(t *testing.T) {
	old := noOpenat2.Load()
	noOpenat2.Store(true)
	t.Cleanup(func() { noOpenat2.Store(old) })
	data := newDataFile(t, t.TempDir(), "t.dets")
	if _, ok := statCanonical(nil, data); !ok {
		t.Fatal("fast path declined a resolved path")
	}
	t.Run("OpenData", TestOpenDataTakesDescriptor)
	t.Run("Untaken", TestOpenDataUntakenClosedByUnlock)
	t.Run("Renamed", TestDataRenamedOverWhileWaiting)
	t.Run("Swapped", TestOpenDataSwappedUnderLock)
}
