package dets

import (
	"io"
	"io/fs"
)

// File is the engine's view of an open file. Every byte the engine reads or
// writes goes through it, so tests can inject faults and build crash images.
// *os.File satisfies it apart from Size; see OSFS.
type File interface {
	io.ReaderAt
	io.WriterAt
	// Sync flushes the file's data and metadata to stable storage.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Size returns the current file size.
	Size() (int64, error)
	Close() error
}

// FS opens and manages files. OSFS is the operating-system implementation;
// Options.FS nil means OSFS.
type FS interface {
	// OpenFile opens a file with os.OpenFile flag semantics (O_RDONLY,
	// O_RDWR, O_CREATE, O_EXCL, O_TRUNC).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	Remove(name string) error
	Rename(oldpath, newpath string) error
	// SyncDir makes directory entries (creates, renames) in dir durable.
	SyncDir(dir string) error
	Stat(name string) (fs.FileInfo, error)
}

// readFull reads exactly len(b) bytes at off; a short read is io.ErrUnexpectedEOF.
func readFull(f File, b []byte, off int64) error {
	n, err := f.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// errShortRead is what readFull returns when the file ends early.
var errShortRead = io.ErrUnexpectedEOF
