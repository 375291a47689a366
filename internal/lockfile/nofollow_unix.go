//go:build linux || darwin || freebsd

package lockfile

// The symlink-free walk with portable calls, which macOS and FreeBSD use
// where Linux has openat2(RESOLVE_NO_SYMLINKS). It builds on Linux too, so
// that its tests run here against openat2's answers.

import (
	"io/fs"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// openParent opens the directory of the absolute, clean path one element
// at a time from the root, each open with O_NOFOLLOW|O_DIRECTORY, so that
// it fails if any directory element is a symlink. It returns the
// directory's descriptor and the final element ("." for the root).
func openParent(path string) (dirfd int, base string, err error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return noFD, "", unix.EINVAL
	}
	dir, base := filepath.Split(path)
	if base == "" {
		base = "." // the root itself
	}
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Open("/", flags, 0)
	if err != nil {
		return noFD, "", err
	}
	for elem := range strings.SplitSeq(strings.Trim(dir, "/"), "/") {
		if elem == "" {
			continue
		}
		next, err := unix.Openat(fd, elem, flags, 0)
		unix.Close(fd)
		if err != nil {
			return noFD, "", err
		}
		fd = next
	}
	return fd, base, nil
}

// walkStat stats path if it is already fully resolved: absolute, clean,
// and reached through no symlink at all (the directory walk of openParent,
// then fstatat without following the final element). That is when
// resolvePath(path) would return path unchanged.
func walkStat(path string) (statInfo, bool) {
	dirfd, base, err := openParent(path)
	if err != nil {
		return statInfo{}, false
	}
	defer unix.Close(dirfd)
	si, err := statAt(dirfd, base, path)
	if err != nil || si.mode&fs.ModeSymlink != 0 {
		return statInfo{}, false
	}
	return si, true
}

// walkOpen is walkStat keeping a descriptor of the file, opened with flags
// from the walked directory, O_NONBLOCK added for the open itself (a FIFO
// swapped in cannot block it) and cleared once fstat shows a regular file.
// Only a regular file is kept.
func walkOpen(path string, flags int) (fd int, st statInfo, ok bool) {
	dirfd, base, err := openParent(path)
	if err != nil {
		return noFD, statInfo{}, false
	}
	defer unix.Close(dirfd)
	fd, err = unix.Openat(dirfd, base, flags|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		return noFD, statInfo{}, false
	}
	st, err = fstatID(fd, path)
	if err == nil && !st.rootKnown {
		// The descriptor's stat cannot tell a file mounted over its own
		// name; the directory entry's can, if it is still this file.
		var at statInfo
		if at, err = statAt(dirfd, base, path); err == nil && at.id != st.id {
			err = unix.ESTALE
		}
		st.rootKnown, st.mountRoot = at.rootKnown, at.mountRoot
	}
	if err != nil || !st.mode.IsRegular() || unix.SetNonblock(fd, false) != nil {
		unix.Close(fd)
		return noFD, statInfo{}, false
	}
	return fd, st, true
}
