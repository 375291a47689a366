//go:build unix

package dets

import "golang.org/x/sys/unix"

func (f osFile) mapShared(length int, writable bool) ([]byte, func() error, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, length, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}

func (f osFile) allocate(cur, size int64) error { return allocateFile(f.File, cur, size) }
