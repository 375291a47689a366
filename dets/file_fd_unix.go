//go:build unix

package dets

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

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
