//go:build !unix

package dets

// The file layer where there is no Unix (Windows): plain *os.File I/O,
// no memory map, no file identities, no directory fsync.

import (
	"io/fs"
	"os"
)

func openOSFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// syncDir is a no-op where directories cannot be fsynced. On Windows the
// rename itself is made durable instead (MOVEFILE_WRITE_THROUGH in
// rename_windows.go).
func syncDir(dir string) error { return nil }

type fileID struct{}

// idOf has no file identity to offer here: IsOpen is always false.
func idOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }

func makeID(dev, ino uint64) (fileID, bool) { return fileID{}, false }

// mapFile reads the whole of f into memory (no mmap on this platform).
func mapFile(f File, size int64) ([]byte, func() error, error) {
	return readWhole(f, size)
}

// renameOverOpen: Windows refuses to replace a file that is open.
const renameOverOpen = false

// OpenDescriptor is OpenFile for a bare descriptor of the table file; see
// the Unix version. Here it wraps fd in an *os.File, and size, dev and ino
// are not used.
func OpenDescriptor(fd int, name string, size int64, dev, ino uint64, opts Options) (*Table, error) {
	return OpenFile(os.NewFile(uintptr(fd), name), opts)
}
