//go:build linux

package lockfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

const supported = true

const (
	lockExclusiveNB = unix.LOCK_EX | unix.LOCK_NB
	lockUnlock      = unix.LOCK_UN
)

type statInfo struct {
	id    fileID
	mode  fs.FileMode
	nlink uint64
}

func fromStat(st *unix.Stat_t) statInfo {
	return statInfo{
		id:    fileID{dev: st.Dev, ino: st.Ino},
		mode:  modeOf(st.Mode),
		nlink: st.Nlink,
	}
}

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

func lstatID(path string) (statInfo, error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Lstat(path, &st) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return fromStat(&st), nil
}

func fstatID(f *os.File) (statInfo, error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(int(f.Fd()), &st) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return fromStat(&st), nil
}

func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// openSidecar opens (creating if needed) the sidecar without following a
// symlink, without blocking on a FIFO, and close-on-exec so that children
// started during a session do not inherit the lock.
func openSidecar(path string) (*os.File, error) {
	const flags = unix.O_CREAT | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	var fd int
	err := ignoringEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDWR|flags, sidecarPerm)
		return err
	})
	if errors.Is(err, unix.EACCES) {
		// Another user's sidecar we may not write: flock works on a
		// read-only descriptor too. Never create in this case.
		err = ignoringEINTR(func() (err error) {
			fd, err = unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
			return err
		})
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, &AliasError{Kind: SymlinkSidecar, Path: path}
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	// O_NONBLOCK only mattered for the open itself.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// flock applies how to the sidecar descriptor, retrying EINTR.
func (l *Lock) flock(how int) error {
	fd := int(l.f.Fd())
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

// checkFS refuses a path on a filesystem that is not known to be local.
func checkFS(path string, h *Hooks) error {
	var st unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Statfs(path, &st) }); err != nil {
		return &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	return judgeFS(uint32(st.Type), path, h)
}

func checkFDFS(f *os.File, h *Hooks) error {
	var st unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Fstatfs(int(f.Fd()), &st) }); err != nil {
		return &fs.PathError{Op: "fstatfs", Path: f.Name(), Err: err}
	}
	return judgeFS(uint32(st.Type), f.Name(), h)
}

func judgeFS(magic uint32, path string, h *Hooks) error {
	if h != nil && h.FSType != nil {
		magic = h.FSType(magic)
	}
	name, local := classifyFS(magic)
	if local {
		return nil
	}
	return &FilesystemError{Magic: magic, Name: name, Path: path}
}

// isMountRoot reports whether path (not followed if a symlink) is the root of
// a mount, which for a file means a single-file bind mount. statx's
// STATX_ATTR_MOUNT_ROOT (Linux 5.8+) is exact. Without it, the mount ID is
// compared with the parent directory's, and without that, the device number
// (which misses same-filesystem bind mounts; documented limitation on old
// kernels).
func isMountRoot(path string) (bool, error) {
	const flags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT
	const mask = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID
	var sx unix.Statx_t
	err := ignoringEINTR(func() error { return unix.Statx(unix.AT_FDCWD, path, flags, mask, &sx) })
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		return devDiffers(path)
	}
	if err != nil {
		return false, &fs.PathError{Op: "statx", Path: path, Err: err}
	}
	if sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	if sx.Mask&unix.STATX_MNT_ID != 0 {
		var px unix.Statx_t
		dir := filepath.Dir(path)
		if err := ignoringEINTR(func() error { return unix.Statx(unix.AT_FDCWD, dir, flags, mask, &px) }); err != nil {
			return false, &fs.PathError{Op: "statx", Path: dir, Err: err}
		}
		if px.Mask&unix.STATX_MNT_ID != 0 {
			return sx.Mnt_id != px.Mnt_id, nil
		}
	}
	return devDiffers(path)
}

func devDiffers(path string) (bool, error) {
	st, err := lstatID(path)
	if err != nil {
		return false, err
	}
	pst, err := lstatID(filepath.Dir(path))
	if err != nil {
		return false, err
	}
	return st.id.dev != pst.id.dev, nil
}
