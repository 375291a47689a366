//go:build unix

package dets

import "golang.org/x/sys/unix"

func (f osFile) mapShared(length int, writable bool) ([]byte, func() error, error) {
	return mapFD(int(f.Fd()), length, writable)
}

func (f *fdFile) mapShared(length int, writable bool) ([]byte, func() error, error) {
	return mapFD(f.fd, length, writable)
}

func mapFD(fd int, length int, writable bool) ([]byte, func() error, error) {
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(fd, 0, length, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}
