//go:build linux || darwin || freebsd

package lockfile

// What the supported Unix systems share: flock(2) on the sidecar, opening
// it, stat mode bits and the filesystem verdict. The stat calls, the
// symlink-free walk and statfs differ: lockfile_linux.go has statx and
// openat2, lockfile_bsd.go the portable calls of macOS and FreeBSD.

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const supported = true

const (
	lockExclusive   = unix.LOCK_EX
	lockExclusiveNB = unix.LOCK_EX | unix.LOCK_NB
	lockUnlock      = unix.LOCK_UN
)

// errNotExist is what a *MissingError wraps.
var errNotExist error = unix.ENOENT

// noFD marks a Lock whose descriptor is closed.
const noFD = -1

func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	default:
		return fs.ModeDevice
	}
}

// cstring returns path NUL-terminated for a system call, or nil if path
// contains a NUL (which no file name can).
func cstring(path string) []byte {
	if strings.IndexByte(path, 0) >= 0 {
		return nil
	}
	b := make([]byte, len(path)+1)
	copy(b, path)
	return b
}

// pathPtr gives the system-call pointer of the NUL-terminated z, or of a
// fresh copy of name when z is nil.
func pathPtr(z []byte, name string) (*byte, error) {
	if z == nil {
		if z = cstring(name); z == nil {
			return nil, unix.EINVAL
		}
	}
	return &z[0], nil
}

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// openSidecar opens the sidecar (creating it if needed and create is set)
// without following a symlink, without blocking on a FIFO, and
// close-on-exec so that children started during a session do not inherit
// the lock. It returns a raw descriptor: no *os.File means no finalizer
// that could close it (and drop the lock) while the Lock is still in use,
// and no fcntl calls to register it with the poller. O_NONBLOCK is left
// set: the descriptor is only ever given to fstat, flock and close, none of
// which look at it (flock's blocking is chosen by LOCK_NB). z is path
// NUL-terminated, or nil.
func openSidecar(z []byte, path string, create bool) (int, error) {
	const flags = unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	p, err := pathPtr(z, path)
	if err != nil {
		return noFD, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	rw := unix.O_RDWR | oLargeFile | flags
	if create {
		rw |= unix.O_CREAT
	}
	fd, err := openat(p, rw, sidecarPerm)
	if err == unix.EACCES {
		// Another user's sidecar we may not write: flock works on a
		// read-only descriptor too. Never create in this case. When
		// there is no sidecar to open, the denial is the answer: a
		// directory we may not create it in.
		if fd, err = openat(p, unix.O_RDONLY|oLargeFile|flags, 0); err == unix.ENOENT {
			err = unix.EACCES
		}
	}
	runtime.KeepAlive(z)
	if err != nil {
		if err == unix.ELOOP || err == symlinkErrno {
			return noFD, &AliasError{Kind: SymlinkSidecar, Path: path}
		}
		return noFD, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

func closeFD(fd int) error { return unix.Close(fd) }

// flock applies how to the sidecar descriptor, retrying EINTR.
func (l *Lock) flock(how int) error {
	fd := l.fd
	call := unix.Flock
	if l.hooks != nil && l.hooks.Flock != nil {
		call = l.hooks.Flock
	}
	err := ignoringEINTR(func() error { return call(fd, how) })
	if how&unix.LOCK_NB != 0 && errors.Is(err, unix.EWOULDBLOCK) {
		return errWouldBlock
	}
	return err
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

func judgeFS(magic uint32, path string, h *Hooks) error {
	if h != nil && h.FSType != nil {
		magic = h.FSType(magic)
	}
	name, local := fsVerdict(magic)
	if local {
		return nil
	}
	return &FilesystemError{Magic: magic, Name: name, Path: path}
}

func devDiffers(path string) (bool, error) {
	var st, pst unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Lstat(path, &st) }); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	dir := filepath.Dir(path)
	if err := ignoringEINTR(func() error { return unix.Lstat(dir, &pst) }); err != nil {
		return false, &fs.PathError{Op: "lstat", Path: dir, Err: err}
	}
	return st.Dev != pst.Dev, nil
}
