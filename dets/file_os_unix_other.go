//go:build unix && !linux

package dets

import (
	"os"

	"golang.org/x/sys/unix"
)

func syncFD(fd int, name string) error {
	for {
		err := unix.Fsync(fd)
		if err != unix.EINTR {
			if err != nil {
				return &os.PathError{Op: "fsync", Path: name, Err: err}
			}
			return nil
		}
	}
}
