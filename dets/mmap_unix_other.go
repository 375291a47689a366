//go:build unix && !linux

package dets

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocateFD extends the file to size bytes (sparse: no fallocate here).
func allocateFD(fd int, name string, cur, size int64) error {
	if err := unix.Ftruncate(fd, size); err != nil {
		return &os.PathError{Op: "truncate", Path: name, Err: err}
	}
	return nil
}
