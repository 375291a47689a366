//go:build unix

package dets

// The file layer on every Unix: opening the table file, the descriptor
// File of OpenDescriptor, file identities for the registry, the shared
// memory map, the repair's read-only map of the old file, and the directory
// fsync after a rename. What differs between Unix systems is the sync
// primitive and the repair's Linux-only hints: file_linux.go,
// file_darwin.go, file_fsync.go and file_nolinux.go.

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openOSFile opens name close-on-exec and wraps the descriptor with
// os.NewFile. os.OpenFile would first try to register a regular file with
// the network poller (two fcntl calls to set and clear O_NONBLOCK around an
// epoll_ctl that Linux refuses for regular files); os.NewFile on a blocking
// descriptor costs one fcntl and keeps the *os.File guarantees (close-once,
// finalizer, reference-counted descriptor use).
func openOSFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	mode := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		mode |= syscall.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		mode |= syscall.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		mode |= syscall.S_ISVTX
	}
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, mode)
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != syscall.EINTR {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// syncDir fsyncs a directory so that renames and creates in it survive a
// power loss (POSIX leaves them in the page cache otherwise).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return err
	}
	return d.Close()
}

type fileID struct{ dev, ino uint64 }

func idOf(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, true
}

func makeID(dev, ino uint64) (fileID, bool) { return fileID{dev, ino}, true }

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

// mapFile returns the whole of f, memory-mapped read-only when f is an OS
// file (so a repair keeps the old file's bytes off the Go heap), or read into
// memory otherwise. The returned function releases the mapping. A file that
// cannot be mapped and is larger than mapSpan (256 MiB on 32-bit targets;
// on 64-bit ones no otp9 file is) is refused with ErrFileTooLarge: a 32-bit
// heap cannot hold it, and a failed allocation would end the process.
func mapFile(f File, size int64) ([]byte, func() error, error) {
	if of, ok := f.(osFile); ok && size > 0 && size == int64(int(size)) {
		b, err := unix.Mmap(int(of.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED|mapPopulate)
		if err == nil {
			return b, func() error { return unix.Munmap(b) }, nil
		}
	}
	if size > mapSpan {
		name := "the file"
		if n, ok := f.(interface{ Name() string }); ok {
			name = n.Name()
		}
		return nil, nil, fmt.Errorf("%w: %d bytes do not fit this process's address space: %s", ErrFileTooLarge, size, name)
	}
	return readWhole(f, size)
}

// renameOverOpen: a file may be replaced by rename while it is open.
const renameOverOpen = true

// OpenDescriptor is OpenFile for a bare descriptor of the table file, for
// a caller that has just opened it and read its size, device and inode
// numbers with fstat or statx (package exclusive does, under its lock). It
// spares the *os.File wrapping and a second fstat. The descriptor must be
// open read-write, or read-only with opts.ReadOnly; name is the file's path,
// used as in OpenFile. The table owns fd from then on and closes it, also
// when OpenDescriptor fails.
func OpenDescriptor(fd int, name string, size int64, dev, ino uint64, opts Options) (*Table, error) {
	if err := opts.validate(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = OSFS{}
	}
	return open(fsys, name, &fdFile{fd: fd, name: name, size: size, id: fileID{dev, ino}}, opts)
}

// fdFile is a File on a bare descriptor. The Table's mutex serializes
// every use of it and its Close, so it needs none of *os.File's reference
// counting.
type fdFile struct {
	fd   int
	name string
	size int64 // the opener's answer, for the first Size call; -1 after
	id   fileID
}

func (f *fdFile) ReadAt(b []byte, off int64) (int, error) {
	return f.full("read", unix.Pread, io.EOF, b, off)
}

func (f *fdFile) WriteAt(b []byte, off int64) (int, error) {
	return f.full("write", unix.Pwrite, io.ErrShortWrite, b, off)
}

// full runs call (pread or pwrite) until all of b is done, retrying
// EINTR; a call that moves nothing gives short.
func (f *fdFile) full(op string, call func(int, []byte, int64) (int, error), short error, b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		n, err := call(f.fd, b[done:], off+int64(done))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return done, &os.PathError{Op: op, Path: f.name, Err: err}
		case n == 0:
			return done, short
		}
		done += n
	}
	return done, nil
}

func (f *fdFile) Sync() error { return syncFD(f.fd, f.name) }

// syncFD flushes the descriptor's data with the platform's syncCall.
func syncFD(fd int, name string) error {
	return retryFD(syncOp, name, func() error { return syncCall(fd) })
}

func (f *fdFile) Truncate(size int64) error {
	return retryFD("truncate", f.name, func() error { return unix.Ftruncate(f.fd, size) })
}

func (f *fdFile) Size() (int64, error) {
	if s := f.size; s >= 0 {
		f.size = -1 // later calls ask the kernel
		return s, nil
	}
	var st unix.Stat_t
	err := retryFD("fstat", f.name, func() error { return unix.Fstat(f.fd, &st) })
	return st.Size, err
}

// retryFD runs call again while it is interrupted (EINTR) and names op
// and the file in its error.
func retryFD(op, name string, call func() error) error {
	for {
		err := call()
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: op, Path: name, Err: err}
		}
		return nil
	}
}

func (f *fdFile) Close() error {
	if err := unix.Close(f.fd); err != nil {
		return &os.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

func (f *fdFile) identity() (fileID, bool) { return f.id, true }
