//go:build darwin || freebsd

package lockfile

// macOS and FreeBSD keep the Linux contract with the portable calls: lstat
// and fstat for identities, a walk of O_NOFOLLOW directory opens for the
// symlink-free proof that Linux gets from one openat2(RESOLVE_NO_SYMLINKS),
// and statfs f_fstypename with the mount flags for the filesystem verdict
// (fstypename.go). Every stat of a path also asks the mount-point question
// (st_dev against the parent directory's, then f_mntonname), which statx
// answers on Linux; a descriptor's stat cannot, so no sidecar descriptor is
// parked.

import (
	"errors"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// oLargeFile: off_t is 64 bits on both systems.
const oLargeFile = 0

// symlinkErrno is what open(2) with O_NOFOLLOW reports for a symlink on
// FreeBSD (macOS reports ELOOP, as Linux does).
const symlinkErrno = unix.EMLINK

// dataOpenFlags open a data file read-write for Options.OpenData. The walk
// adds O_NONBLOCK for the open itself, so that a FIFO swapped in cannot
// block it, and clears it once fstat shows a regular file.
const dataOpenFlags = unix.O_RDWR | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY

// statInfo is what the checks need from one stat call. These systems have
// no mount-root attribute: rootKnown is set where a path's stat answered
// the question itself (lstatIDz, statAt), never for a descriptor's.
type statInfo struct {
	id    fileID
	mode  fs.FileMode
	nlink uint64

	rootKnown, mountRoot bool
	size                 int64
}

func fromStat(st *unix.Stat_t) statInfo {
	return statInfo{
		// st_dev is int32 on macOS, uint64 on FreeBSD; both convert alike
		// on every call, so IDs compare.
		id:    fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)},
		mode:  modeOf(uint32(st.Mode)),
		nlink: uint64(st.Nlink),
		size:  st.Size,
	}
}

// lstatIDz stats name without following a final symlink, and answers the
// mount-point question for anything but a symlink (rootKnown), so that the
// checks under the lock see a file or sidecar mounted over its own name
// as Linux's statx shows it. z (the same path NUL-terminated) is for
// Linux's statx and unused here.
func lstatIDz(_ []byte, name string) (statInfo, error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Lstat(name, &st) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	si := fromStat(&st)
	if si.mode&fs.ModeSymlink == 0 {
		var dir unix.Stat_t
		if ignoringEINTR(func() error { return unix.Lstat(filepath.Dir(name), &dir) }) == nil {
			si.rootKnown = true
			si.mountRoot = uint64(dir.Dev) != si.id.dev || namesMountPoint(name)
		}
	}
	return si, nil
}

// statAt is lstatIDz for base in the directory dirfd, for the walk of
// nofollow_unix.go; path is the whole path.
func statAt(dirfd int, base, path string) (statInfo, error) {
	var st, dir unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "fstatat", Path: path, Err: err}
	}
	si := fromStat(&st)
	if si.mode&fs.ModeSymlink == 0 && ignoringEINTR(func() error { return unix.Fstat(dirfd, &dir) }) == nil {
		si.rootKnown = true
		si.mountRoot = uint64(dir.Dev) != si.id.dev || namesMountPoint(path)
	}
	return si, nil
}

// namesMountPoint reports whether statfs names path itself as its mount
// point (a FreeBSD nullfs mount of a single file onto another file of the
// same filesystem, where st_dev does not change).
func namesMountPoint(path string) bool {
	var sf unix.Statfs_t
	if ignoringEINTR(func() error { return unix.Statfs(path, &sf) }) != nil {
		return false
	}
	return fstypeString(sf.Mntonname[:]) == path
}

// fstatID stats an open descriptor; name is for error messages.
func fstatID(fd int, name string) (statInfo, error) {
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	return fromStat(&st), nil
}

// openat is open(2) of a NUL-terminated path.
func openat(p *byte, flags int, perm uint32) (int, error) {
	path := unix.BytePtrToString(p)
	for {
		fd, err := unix.Open(path, flags, perm)
		if err == nil {
			return fd, nil
		}
		if err != unix.EINTR {
			return noFD, err
		}
	}
}

// statCanonical stats path if it is already fully resolved (walkStat);
// ok is false whenever the walk cannot answer, and callers then take the
// general path. z is unused.
func statCanonical(_ []byte, path string) (statInfo, bool) { return walkStat(path) }

// openCanonical is statCanonical keeping a descriptor of the file, opened
// with flags (dataOpenFlags); the caller closes fd when ok.
func openCanonical(_ []byte, path string, flags uint64) (int, statInfo, bool) {
	return walkOpen(path, int(flags))
}

// mountRootOf answers the mount-point question for path from st when the
// stat answered it, and asks again otherwise.
func mountRootOf(path string, st statInfo) (bool, error) {
	if st.rootKnown {
		return st.mountRoot, nil
	}
	return isMountRoot(path)
}

// isMountRoot reports whether path (not followed) is the root of a mount:
// its device differs from its directory's, or statfs names path itself.
func isMountRoot(path string) (bool, error) {
	if differs, err := devDiffers(path); err != nil || differs {
		return differs, err
	}
	return namesMountPoint(path), nil
}

// cachedFSType: there is no unique mount ID to cache verdicts by.
func cachedFSType(statInfo) (uint32, bool) { return 0, false }

// fsVerdict names a named-filesystem code and says whether it is local.
func fsVerdict(code uint32) (name string, local bool) { return classifyNamedFS(code) }

// checkFS refuses a path on a filesystem that is not known to be local.
func checkFS(path string, h *Hooks) error {
	var sf unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Statfs(path, &sf) }); err != nil {
		return &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	_, err := judgeStatfs(&sf, path, h)
	return err
}

// checkFDFS is checkFS for the open descriptor fd; it returns the
// filesystem's code (fsCodeOf).
func checkFDFS(fd int, _ statInfo, name string, h *Hooks) (uint32, error) {
	var sf unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Fstatfs(fd, &sf) }); err != nil {
		return 0, &fs.PathError{Op: "fstatfs", Path: name, Err: err}
	}
	return judgeStatfs(&sf, name, h)
}

// judgeStatfs encodes sf and judges it; an unknown filesystem's error
// carries the name the kernel gave.
func judgeStatfs(sf *unix.Statfs_t, path string, h *Hooks) (uint32, error) {
	flags := uint64(sf.Flags) // uint32 on macOS, uint64 on FreeBSD
	code := fsCodeOf(sf.Fstypename[:], flags&unix.MNT_LOCAL != 0, flags&unix.MNT_UNION != 0)
	err := judgeFS(code, path, h)
	var fe *FilesystemError
	if errors.As(err, &fe) && fe.Name == "unknown" {
		fe.Name = fstypeString(sf.Fstypename[:])
	}
	return code, err
}
