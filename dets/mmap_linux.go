package dets

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocateFD extends the file to size bytes with reserved blocks, so that
// a full disk shows up here and not as a fault on a store into the map.
// File systems without fallocate get a plain (sparse) extension.
func allocateFD(fd int, name string, cur, size int64) error {
	var err error
	for {
		err = unix.Fallocate(fd, 0, cur, size-cur)
		if err != unix.EINTR {
			break
		}
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = unix.Ftruncate(fd, size)
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: name, Err: err}
	}
	return nil
}
