package dets

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/godets/godets/etf"
)

// A repair replaces the table with a file it builds: the rebuilt table
// keeps the permission bits and (where files have owners) the owner and
// group of the one it replaces, in both formats. It had the creator's
// owner and mode 0644: a root repair of a service's 0640 table left a
// world-readable file the service could no longer write.
func TestRepairKeepsOwnerAndMode(t *testing.T) {
	for _, format := range []Format{OTP9, Native} {
		path := filepath.Join(t.TempDir(), "t.dets")
		tab := openT(t, path, Options{Format: format})
		for i := range 50 {
			must(t, tab.Insert(tup(etf.Int(i), bin("v"))))
		}
		must(t, tab.Close())
		must(t, os.Chmod(path, 0o640))
		uid, gid := os.Getuid(), os.Getgid()
		if uid == 0 && runtime.GOOS != "windows" {
			uid, gid = 65534, 65534 // a service's user, as root would repair its file
			must(t, os.Chown(path, uid, gid))
		}
		stats, err := Repair(path, Options{}, nil)
		if err != nil || stats.Objects != 50 {
			t.Fatalf("%v: repair: %+v, %v", format, stats, err)
		}
		fi, err := os.Stat(path)
		must(t, err)
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%v: mode %v after the repair, want 0640", format, fi.Mode().Perm())
		}
		if fuid, fgid, ok := ownerOf(fi); ok && (fuid != uid || fgid != gid) {
			t.Errorf("%v: owner %d:%d after the repair, want %d:%d", format, fuid, fgid, uid, gid)
		}
	}
}

// denyWriteFS refuses to open one path for writing, as the file system
// does for a table its caller may not write.
type denyWriteFS struct {
	OSFS
	path string
}

func (d denyWriteFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if name == d.path && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	return d.OSFS.OpenFile(name, flag, perm)
}

// A repair of a table its caller may not write is refused before anything
// is written, though the rename that replaces the table needs only the
// directory's permission: the file stays byte-identical and no PATH.TMP
// is left.
func TestRepairRefusesATableItCannotWrite(t *testing.T) {
	for _, format := range []Format{OTP9, Native} {
		path := filepath.Join(t.TempDir(), "t.dets")
		tab := openT(t, path, Options{Format: format})
		must(t, tab.Insert(tup(etf.Int(1), bin("v"))))
		must(t, tab.Close())
		before, err := os.ReadFile(path)
		must(t, err)
		_, err = Repair(path, Options{FS: denyWriteFS{path: path}}, nil)
		if !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("%v: repair of an unwritable table: %v, want a permission error", format, err)
		}
		if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
			t.Fatalf("%v: the table changed (%v)", format, err)
		}
		if _, err := os.Stat(tmpPath(path)); !os.IsNotExist(err) {
			t.Fatalf("%v: %s left behind (%v)", format, tmpPath(path), err)
		}
	}
}
