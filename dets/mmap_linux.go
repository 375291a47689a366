package dets

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocateFile extends f to size bytes with reserved blocks, so that a full
// disk shows up here and not as a fault on a store into the map. File
// systems without fallocate get a plain (sparse) extension.
func allocateFile(f *os.File, cur, size int64) error {
	var err error
	for {
		err = unix.Fallocate(int(f.Fd()), 0, cur, size-cur)
		if err != unix.EINTR {
			break
		}
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(size)
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}
