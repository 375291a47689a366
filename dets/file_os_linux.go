package dets

import (
	"os"

	"golang.org/x/sys/unix"
)

// Sync flushes the file's data with fdatasync: it writes the metadata
// needed to read the data back (the size), but not timestamps, so a sync
// that only overwrote blocks costs no journal commit.
func (f osFile) Sync() error { return syncFD(int(f.Fd()), f.Name()) }

func syncFD(fd int, name string) error {
	for {
		err := unix.Fdatasync(fd)
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: name, Err: err}
			}
			return nil
		}
	}
}
