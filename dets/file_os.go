package dets

import (
	"io/fs"
	"os"
)

// OSFS is the FS of the operating system.
type OSFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// OpenFile opens name with os.OpenFile flag semantics (close-on-exec).
func (OSFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	f, err := openOSFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Remove removes name.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// Rename renames oldpath to newpath, replacing newpath.
func (OSFS) Rename(oldpath, newpath string) error { return renameFile(oldpath, newpath) }

// Stat returns the file's metadata.
func (OSFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

// SyncDir fsyncs the directory dir.
func (OSFS) SyncDir(dir string) error { return syncDir(dir) }
