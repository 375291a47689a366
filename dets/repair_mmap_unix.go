//go:build unix

package dets

import (
	"golang.org/x/sys/unix"
)

// mapFile returns the whole of f, memory-mapped read-only when f is an OS
// file (so a repair keeps the old file's bytes off the Go heap), or read into
// memory otherwise. The returned function releases the mapping.
func mapFile(f File, size int64) ([]byte, func() error, error) {
	if of, ok := f.(osFile); ok && size > 0 && size == int64(int(size)) {
		b, err := unix.Mmap(int(of.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED|mapPopulate)
		if err == nil {
			return b, func() error { return unix.Munmap(b) }, nil
		}
	}
	return readWhole(f, size)
}

// renameOverOpen: a file may be replaced by rename while it is open.
const renameOverOpen = true
