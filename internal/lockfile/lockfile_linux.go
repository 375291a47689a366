//go:build linux

package lockfile

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// oLargeFile lets a 32-bit process open files of 2 GiB and more.
const oLargeFile = unix.O_LARGEFILE

// symlinkErrno is what open(2) with O_NOFOLLOW reports for a symlink.
const symlinkErrno = unix.ELOOP

// statInfo is what the checks need from one stat call. statx fills every
// field in one system call; the lstat/fstat fallback (kernels without statx,
// or seccomp filters refusing it) leaves rootKnown and mntUnique false, and
// the callers then ask the slower questions separately.
type statInfo struct {
	id    fileID
	mode  fs.FileMode
	nlink uint64
	// rootKnown says whether mountRoot is the kernel's STATX_ATTR_MOUNT_ROOT.
	rootKnown, mountRoot bool
	// mntUnique says whether mnt is a STATX_MNT_ID_UNIQUE mount ID.
	mntUnique bool
	mnt       uint64
	size      int64
}

func fromStat(st *unix.Stat_t) statInfo {
	return statInfo{
		id:    fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)},
		mode:  modeOf(st.Mode),
		nlink: uint64(st.Nlink), // uint32 on arm64, 386 and arm
		size:  st.Size,
	}
}

func fromStatx(sx *unix.Statx_t) statInfo {
	si := statInfo{
		// Same encoding as stat(2)'s st_dev, so IDs compare with fstat ones.
		id:    fileID{dev: unix.Mkdev(sx.Dev_major, sx.Dev_minor), ino: sx.Ino},
		mode:  modeOf(uint32(sx.Mode)),
		nlink: uint64(sx.Nlink),
		size:  int64(sx.Size),
	}
	if sx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		si.rootKnown = true
		si.mountRoot = sx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
	}
	if sx.Mask&unix.STATX_MNT_ID_UNIQUE != 0 {
		si.mntUnique = true
		si.mnt = sx.Mnt_id
	}
	return si
}

const statxMask = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID_UNIQUE

// statxFallback reports a statx failure that means "use the older calls".
func statxFallback(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
}

// statx is unix.Statx on a path already NUL-terminated, so the hot path
// copies no path per call.
func statx(dirfd int, p *byte, flags, mask int, sx *unix.Statx_t) error {
	for {
		_, _, e := unix.Syscall6(unix.SYS_STATX, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(flags), uintptr(mask), uintptr(unsafe.Pointer(sx)), 0)
		if e == 0 {
			return nil
		}
		if e != unix.EINTR {
			return e
		}
	}
}

// lstatIDz stats the path z (NUL-terminated; nil means "copy name") without
// following a final symlink (and without triggering an automount), with the
// mount-root attribute and mount ID when the kernel has them. name is the
// same path, for errors.
func lstatIDz(z []byte, name string) (statInfo, error) {
	p, err := pathPtr(z, name)
	if err != nil {
		return statInfo{}, &fs.PathError{Op: "statx", Path: name, Err: err}
	}
	var sx unix.Statx_t
	err = statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, statxMask, &sx)
	runtime.KeepAlive(z)
	if err == nil {
		return fromStatx(&sx), nil
	}
	if !statxFallback(err) {
		return statInfo{}, &fs.PathError{Op: "statx", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Lstat(name, &st) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return fromStat(&st), nil
}

// statAt stats base in the directory dirfd without following it, with the
// mount-root attribute when the kernel has it, for the walk of
// nofollow_unix.go; path is the whole path, for errors.
func statAt(dirfd int, base, path string) (statInfo, error) {
	var sx unix.Statx_t
	err := ignoringEINTR(func() error {
		return unix.Statx(dirfd, base, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT, statxMask, &sx)
	})
	if err == nil {
		return fromStatx(&sx), nil
	}
	if !statxFallback(err) {
		return statInfo{}, &fs.PathError{Op: "statx", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "fstatat", Path: path, Err: err}
	}
	return fromStat(&st), nil
}

// emptyPath is "" for statx on a descriptor (AT_EMPTY_PATH).
var emptyPath = [1]byte{0}

// fstatID stats an open descriptor; name is for error messages.
func fstatID(fd int, name string) (statInfo, error) {
	var sx unix.Statx_t
	err := statx(fd, &emptyPath[0], unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, statxMask, &sx)
	if err == nil {
		return fromStatx(&sx), nil
	}
	if !statxFallback(err) {
		return statInfo{}, &fs.PathError{Op: "statx", Path: name, Err: err}
	}
	var st unix.Stat_t
	if err := ignoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return statInfo{}, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	return fromStat(&st), nil
}

// statCanonical stats path if it is already fully resolved: absolute,
// lexically clean, and naming an existing file reached through no symlink at
// all (openat2 with RESOLVE_NO_SYMLINKS refuses any symlink element,
// including the last, with ELOOP). That is exactly when resolvePath(path)
// would return path unchanged, so callers may skip the element-by-element
// walk of filepath.EvalSymlinks. The O_PATH descriptor never opens the file
// itself (no FIFO or device open), and the stat is of that descriptor, so
// the answer describes the very file the walk reached. ok is false whenever
// the fast path cannot answer (relative or unclean path, any symlink, a
// missing file, openat2 unavailable, any error); callers then take the
// general path, which also reports the errors. z is path NUL-terminated,
// or nil.
func statCanonical(z []byte, path string) (st statInfo, ok bool) {
	fd, st, ok := openCanonical(z, path, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW)
	if ok {
		unix.Close(fd)
		return st, true
	}
	if noOpenat2.Load() {
		return walkStat(path)
	}
	return st, false
}

// noOpenat2 records that openat2 is not there (kernels before 5.6,
// seccomp filters that refuse it, qemu-user): the fast paths then take the
// portable walk of nofollow_unix.go, as macOS and FreeBSD do.
var noOpenat2 atomic.Bool

// dataOpenFlags open a data file read-write for Options.OpenData. Without
// O_NONBLOCK, os.NewFile leaves the descriptor out of the poller (as
// os.OpenFile does for regular files). A FIFO swapped in for the file does
// not block: on Linux an O_RDWR open of a FIFO returns at once, and the
// stat that follows refuses it.
const dataOpenFlags = unix.O_RDWR | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY | unix.O_LARGEFILE

// openCanonical is statCanonical keeping the descriptor, opened with
// flags: fd and its stat are returned when ok, and the caller closes fd.
func openCanonical(z []byte, path string, flags uint64) (fd int, st statInfo, ok bool) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return noFD, statInfo{}, false
	}
	if noOpenat2.Load() {
		// O_PATH is for statCanonical, which walks by itself.
		if flags&unix.O_PATH != 0 {
			return noFD, statInfo{}, false
		}
		return walkOpen(path, int(flags))
	}
	p, err := pathPtr(z, path)
	if err != nil {
		return noFD, statInfo{}, false
	}
	how := unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_NO_SYMLINKS}
	fd, err = openat2(p, &how)
	runtime.KeepAlive(z)
	if err == unix.ENOSYS || err == unix.EPERM {
		noOpenat2.Store(true)
		return openCanonical(z, path, flags)
	}
	if err != nil {
		return noFD, statInfo{}, false
	}
	st, err = fstatID(fd, path)
	if err != nil || st.mode&fs.ModeSymlink != 0 {
		unix.Close(fd)
		return noFD, statInfo{}, false
	}
	return fd, st, true
}

// cwdFD is AT_FDCWD in a variable: as a constant, -100 cannot convert to
// a uintptr system-call argument.
var cwdFD = unix.AT_FDCWD

// openat2 is unix.Openat2 from AT_FDCWD on a NUL-terminated path.
func openat2(p *byte, how *unix.OpenHow) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT2, uintptr(cwdFD), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(how)), unsafe.Sizeof(*how), 0, 0)
		if e == 0 {
			return int(r), nil
		}
		if e != unix.EINTR {
			return noFD, e
		}
	}
}

// openat is open(2) from AT_FDCWD on a NUL-terminated path.
func openat(p *byte, flags int, perm uint32) (int, error) {
	for {
		r, _, e := unix.Syscall6(unix.SYS_OPENAT, uintptr(cwdFD), uintptr(unsafe.Pointer(p)), uintptr(flags), uintptr(perm), 0, 0)
		if e == 0 {
			return int(r), nil
		}
		if e != unix.EINTR {
			return noFD, e
		}
	}
}

// mountRootOf answers the mount-point question for path from st when statx
// gave the attribute, and asks the kernel otherwise.
func mountRootOf(path string, st statInfo) (bool, error) {
	if st.rootKnown {
		return st.mountRoot, nil
	}
	return isMountRoot(path)
}

// fsTypes caches statfs f_type by STATX_MNT_ID_UNIQUE mount ID. This is
// sound because a mount is bound to one superblock for its whole life (a
// remount changes options, never the filesystem type), and the unique mount
// ID (Linux 6.8+) is never reused while the system runs, so an entry can
// never describe a different mount. The classic mount ID and st_dev are both
// reused after an unmount (anonymous devices such as tmpfs, overlay and FUSE
// draw from one pool), so nothing is cached without the unique ID. Entries
// are only learnt from a descriptor (statx and fstatfs of the same open
// file), never from two lookups of a path that could change in between.
var fsTypes struct {
	sync.Mutex
	m map[uint64]uint32
}

// maxFSTypes bounds the cache; it is cleared when full.
const maxFSTypes = 1024

func cachedFSType(st statInfo) (uint32, bool) {
	if !st.mntUnique {
		return 0, false
	}
	fsTypes.Lock()
	magic, ok := fsTypes.m[st.mnt]
	fsTypes.Unlock()
	return magic, ok
}

func rememberFSType(st statInfo, magic uint32) {
	if !st.mntUnique {
		return
	}
	fsTypes.Lock()
	if fsTypes.m == nil || len(fsTypes.m) >= maxFSTypes {
		fsTypes.m = make(map[uint64]uint32)
	}
	fsTypes.m[st.mnt] = magic
	fsTypes.Unlock()
}

// checkFS refuses a path on a filesystem that is not known to be local.
func checkFS(path string, h *Hooks) error {
	var st unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Statfs(path, &st) }); err != nil {
		return &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	return judgeFS(uint32(st.Type), path, h)
}

// checkFDFS is checkFS for the open descriptor fd, whose statx result is st.
// The verdict comes from the mount-ID cache when it can, from fstatfs (which
// then fills the cache) otherwise. It returns the type the kernel gave.
func checkFDFS(fd int, st statInfo, name string, h *Hooks) (uint32, error) {
	if magic, ok := cachedFSType(st); ok {
		return magic, judgeFS(magic, name, h)
	}
	var sf unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Fstatfs(fd, &sf) }); err != nil {
		return 0, &fs.PathError{Op: "fstatfs", Path: name, Err: err}
	}
	rememberFSType(st, uint32(sf.Type))
	return uint32(sf.Type), judgeFS(uint32(sf.Type), name, h)
}

// fsVerdict names the statfs f_type magic and says whether it is local.
func fsVerdict(magic uint32) (name string, local bool) { return classifyFS(magic) }

// isMountRoot reports whether path (not followed if a symlink) is the root of
// a mount, which for a file means a single-file bind mount. statx's
// STATX_ATTR_MOUNT_ROOT (Linux 5.8+) is exact; lstatID already asks for it, so
// this runs only when that answer was missing. Without it, the mount ID is
// compared with the parent directory's, and without that, the device number
// (which misses same-filesystem bind mounts; documented limitation on old
// kernels).
func isMountRoot(path string) (bool, error) {
	const flags = unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT
	const mask = unix.STATX_BASIC_STATS | unix.STATX_MNT_ID
	var sx unix.Statx_t
	err := ignoringEINTR(func() error { return unix.Statx(unix.AT_FDCWD, path, flags, mask, &sx) })
	if statxFallback(err) {
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
