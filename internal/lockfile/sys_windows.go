package lockfile

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// System calls of the Windows lock: resolving the data path to its final
// path, judging its volume, and the semaphore itself.

// resolve turns path into a Target: the final path of the data file (every
// symlink and junction followed by the system), or, for a file still to be
// created, the final path of its directory joined with its base name. The
// file must be a regular disk file with one link, on a local drive with a
// known filesystem.
func resolve(path string, h *Hooks) (*Target, error) {
	if path == "" {
		return nil, &AliasError{Kind: InvalidName, Path: path}
	}
	t := &Target{raw: path}
	// GetFullPathName is lexical: it touches nothing. Refusing what it
	// gives before any open keeps a network share or a device (a pipe, a
	// serial port, "C:\\dir\\COM1" is one) from ever being opened.
	full, err := windows.FullPath(path)
	if err != nil {
		return nil, &fs.PathError{Op: "GetFullPathName", Path: path, Err: err}
	}
	if _, _, err := canonicalLockPath(full); err != nil {
		switch {
		case errors.Is(err, errNetworkPath):
			return nil, &FilesystemError{Name: "network share", Path: path}
		case strings.HasPrefix(full, `\\.\`):
			return nil, &AliasError{Kind: NonRegularData, Path: path}
		}
		return nil, &FilesystemError{Name: "volume without a drive letter", Path: path}
	}
	path = full
	fh, err := openForQuery(path, 0)
	switch {
	case err == nil:
		defer windows.CloseHandle(fh)
		if err := t.describeData(fh, path); err != nil {
			return nil, err
		}
	case isNotExist(err) || errors.Is(err, windows.ERROR_CANT_RESOLVE_FILENAME):
		// Is the name there, but not what it points to?
		if lh, lerr := openForQuery(path, windows.FILE_FLAG_OPEN_REPARSE_POINT); lerr == nil {
			windows.CloseHandle(lh)
			return nil, &AliasError{Kind: DanglingSymlink, Path: path}
		}
		if !isNotExist(err) {
			return nil, &AliasError{Kind: DanglingSymlink, Path: path}
		}
		dir, base, ok := splitNewPath(path)
		if !ok {
			return nil, &AliasError{Kind: InvalidName, Path: path}
		}
		dh, err := openForQuery(dir, 0)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		defer windows.CloseHandle(dh)
		if err := t.describeDir(dh, dir, base); err != nil {
			return nil, err
		}
		fh = dh
	default:
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := checkVolume(fh, t.Data, h); err != nil {
		return nil, err
	}
	t.Sidecar, t.id = lockName(t.folded)
	return t, nil
}

// describeData fills t from a handle of an existing data file.
func (t *Target) describeData(fh windows.Handle, path string) error {
	if typ, err := windows.GetFileType(fh); err != nil || typ != windows.FILE_TYPE_DISK {
		return &AliasError{Kind: NonRegularData, Path: path}
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(fh, &info); err != nil {
		return &fs.PathError{Op: "GetFileInformationByHandle", Path: path, Err: err}
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
		return &AliasError{Kind: NonRegularData, Path: path}
	}
	if info.NumberOfLinks != 1 {
		return &AliasError{Kind: HardLinkedData, Path: path}
	}
	if err := t.setFinal(fh, path, ""); err != nil {
		return err
	}
	t.dataExists = true
	t.dataID = ID{Dev: uint64(info.VolumeSerialNumber), Ino: uint64(info.FileIndexHigh)<<32 | uint64(info.FileIndexLow)}
	return nil
}

// describeDir fills t from a handle of the directory of a file to create.
func (t *Target) describeDir(dh windows.Handle, dir, base string) error {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(dh, &info); err != nil {
		return &fs.PathError{Op: "GetFileInformationByHandle", Path: dir, Err: err}
	}
	if info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY == 0 {
		return &fs.PathError{Op: "open", Path: dir, Err: windows.ERROR_DIRECTORY}
	}
	return t.setFinal(dh, dir, base)
}

// setFinal sets t.Data and t.folded from the final path of h, joined with
// base if that is not empty.
func (t *Target) setFinal(h windows.Handle, path, base string) error {
	final, err := finalPath(h)
	if err != nil {
		return &fs.PathError{Op: "GetFinalPathNameByHandle", Path: path, Err: err}
	}
	if base != "" {
		if final[len(final)-1] != '\\' {
			final += `\`
		}
		final += base
	}
	data, folded, err := canonicalLockPath(final)
	switch {
	case errors.Is(err, errNetworkPath):
		return &FilesystemError{Name: "network share", Path: path}
	case err != nil:
		return &FilesystemError{Name: "volume without a drive letter", Path: path}
	}
	t.Data, t.folded = data, folded
	return nil
}

// openForQuery opens path for its attributes only, sharing everything, so
// that no other opener is disturbed. Directories open too (backup
// semantics), so that a directory at the data path can be told apart.
func openForQuery(path string, flags uint32) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(longPath(path))
	if err != nil {
		return windows.InvalidHandle, err
	}
	return windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|flags, 0)
}

// longPath gives an absolute path of MAX_PATH-12 characters or more the
// \\?\ prefix, under which Win32 accepts it instead of failing, as package
// os does. \\?\ also turns off the lexical handling of "." and "..", so the
// path is cleaned first, which is the same handling (Win32 resolves ".."
// before it follows links).
func longPath(path string) string {
	if len(path) < windows.MAX_PATH-12 || !filepath.IsAbs(path) || strings.HasPrefix(path, `\\`) {
		return path
	}
	return `\\?\` + filepath.Clean(path)
}

func isNotExist(err error) bool {
	return errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND)
}

// Flags of GetFinalPathNameByHandle (not in x/sys/windows). Both are
// zero: the defaults, spelled out.
const (
	fileNameNormalized = 0x0 // names as stored, long names for short ones
	volumeNameDOS      = 0x0 // a drive letter (or UNC\ for a share)
)

// finalPath is GetFinalPathNameByHandle with a drive letter
// (VOLUME_NAME_DOS) and the names as stored (FILE_NAME_NORMALIZED).
func finalPath(h windows.Handle) (string, error) {
	buf := make([]uint16, windows.MAX_PATH)
	for {
		n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), volumeNameDOS|fileNameNormalized)
		if err != nil {
			return "", err
		}
		if int(n) < len(buf) {
			if n == 0 {
				return "", windows.ERROR_INVALID_NAME
			}
			return windows.UTF16ToString(buf[:n]), nil
		}
		// Too small: n is the size needed, terminating NUL included.
		buf = make([]uint16, n)
	}
}

// localDriveTypes are the drive types accepted: the disk is attached to
// this machine. Network drives, optical drives and unknown roots are
// refused.
var localDriveTypes = map[uint32]bool{windows.DRIVE_REMOVABLE: true, windows.DRIVE_FIXED: true, windows.DRIVE_RAMDISK: true}

// localFileSystems are the filesystems accepted, by the name
// GetVolumeInformationByHandle gives. Any other (a cluster volume such as
// CSVFS, a user-mode filesystem) is refused.
var localFileSystems = map[string]bool{"NTFS": true, "ReFS": true, "FAT": true, "FAT32": true, "exFAT": true}

// checkVolume refuses a file whose drive is not local or whose filesystem
// is not known. data is the final path (X:\...), h a handle on the file or
// its directory. The drive type is asked of the volume's mount point,
// which is not X:\ for a volume mounted in a folder; the mount point of
// the file's directory, which always exists, because only directories can
// be mount points.
func checkVolume(h windows.Handle, data string, hooks *Hooks) error {
	dir, err := windows.UTF16PtrFromString(longPath(filepath.Dir(data)))
	if err != nil {
		return err
	}
	root := make([]uint16, max(len(data)+2, windows.MAX_PATH+1))
	if err := windows.GetVolumePathName(dir, &root[0], uint32(len(root))); err != nil {
		return &fs.PathError{Op: "GetVolumePathName", Path: data, Err: err}
	}
	typ := windows.GetDriveType(&root[0])
	if hooks != nil && hooks.FSType != nil {
		typ = hooks.FSType(typ)
	}
	if !localDriveTypes[typ] {
		name := "drive that is not local"
		if typ == windows.DRIVE_REMOTE {
			name = "network drive"
		}
		return &FilesystemError{Magic: typ, Name: name, Path: data}
	}
	var fsName [windows.MAX_PATH + 1]uint16
	if err := windows.GetVolumeInformationByHandle(h, nil, 0, nil, nil, nil, &fsName[0], uint32(len(fsName))); err != nil {
		return &fs.PathError{Op: "GetVolumeInformationByHandle", Path: data, Err: err}
	}
	if name := windows.UTF16ToString(fsName[:]); !localFileSystems[name] {
		if name == "" {
			name = "unknown"
		}
		return &FilesystemError{Magic: typ, Name: name, Path: data}
	}
	return nil
}

// The semaphore calls, which golang.org/x/sys/windows does not wrap.
var (
	kernel32             = windows.NewLazySystemDLL("kernel32.dll")
	procCreateSemaphoreW = kernel32.NewProc("CreateSemaphoreW")
	procReleaseSemaphore = kernel32.NewProc("ReleaseSemaphore")
)

// openSemaphore opens the named semaphore, creating it with count 1 and
// maximum 1 if no handle to it exists anywhere. The handle is not
// inheritable (no security attributes), so a child process never holds it.
func openSemaphore(name string) (windows.Handle, error) {
	if procCreateSemaphoreW.Find() != nil || procReleaseSemaphore.Find() != nil {
		return 0, ErrUnsupportedTarget
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return 0, err
	}
	// HANDLE CreateSemaphoreW(LPSECURITY_ATTRIBUTES, LONG initial, LONG
	// maximum, LPCWSTR name). An existing semaphore is opened, with
	// ERROR_ALREADY_EXISTS as the last error, and its counts are kept.
	r, _, e := syscall.SyscallN(procCreateSemaphoreW.Addr(), 0, 1, 1, uintptr(unsafe.Pointer(p)))
	if r == 0 {
		return 0, errnoOr(e)
	}
	return windows.Handle(r), nil
}

// releaseSemaphore adds one to the count: the lock is free again.
func releaseSemaphore(h windows.Handle) error {
	// BOOL ReleaseSemaphore(HANDLE, LONG count, LPLONG previous).
	r, _, e := syscall.SyscallN(procReleaseSemaphore.Addr(), uintptr(h), 1, 0)
	if r == 0 {
		return errnoOr(e)
	}
	return nil
}

func errnoOr(e syscall.Errno) error {
	if e == 0 {
		return syscall.EINVAL
	}
	return e
}
