package lockfile

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The declarations every platform shares: the Unix lease (lockfile.go) and
// the Windows one (api_windows.go, lockfile_windows.go) give the same
// errors, so that package exclusive compiles and classifies alike.

// SidecarSuffix is appended to the resolved data path to name the lock file.
const SidecarSuffix = ".slate.lock"

// PollInterval is the longest pause between two lock attempts while waiting.
const PollInterval = 20 * time.Millisecond

// Errors. Each acquisition error matches exactly one of these with errors.Is.
var (
	// ErrBusy: another owner (process, or descriptor in this process) holds
	// the lock and the caller asked for a single attempt.
	ErrBusy = errors.New("lockfile: lock is held by another owner")
	// ErrTimedOut: the wait's deadline passed before the lock was
	// obtained. A lock obtained after the deadline, even a moment after,
	// counts as not obtained: it is released before this is returned, or
	// a *LateReleaseError (which matches ErrTimedOut) says it could not be.
	ErrTimedOut = errors.New("lockfile: wait for the lock timed out")
	// ErrUnsupportedFilesystem: the data directory, data file or sidecar is
	// on a filesystem that is not known to be local (on Windows: a network
	// share, a drive that is not local, or an unknown filesystem). See
	// *FilesystemError.
	ErrUnsupportedFilesystem = errors.New("lockfile: unsupported filesystem")
	// ErrUnsafeAlias: the path could reach the file under more than one
	// sidecar, or the namespace changed under the lock. See *AliasError.
	ErrUnsafeAlias = errors.New("lockfile: unsafe alias")
	// ErrUnsupportedTarget: this operating system is not supported.
	ErrUnsupportedTarget = errors.New("lockfile: unsupported target platform")
	// ErrReleased: Unlock was called on a lock that was already released.
	ErrReleased = errors.New("lockfile: lock already released")
	// ErrNoDataFile: Options.ExistingOnly was set and the data file does
	// not exist. See *MissingError, which also matches fs.ErrNotExist.
	ErrNoDataFile = errors.New("lockfile: data file does not exist")
)

// AliasKind says why a path was refused as an unsafe alias.
type AliasKind uint8

// Alias kinds. The sidecar kinds never occur on Windows, which has no
// sidecar file.
const (
	HardLinkedData    AliasKind = iota + 1 // data file has more than one hard link
	DanglingSymlink                        // data path is a symlink to nothing (or a loop)
	NonRegularData                         // data path is a directory, FIFO, device or socket
	SymlinkSidecar                         // sidecar is a symlink
	HardLinkedSidecar                      // sidecar has more than one hard link
	NonRegularSidecar                      // sidecar is not a regular file
	MountPoint                             // data file or sidecar is itself a mount point
	IdentityChanged                        // data path or sidecar changed while locking
	InvalidName                            // final path element is empty, "." or "..", or the path holds a NUL
)

var aliasKindNames = [...]string{
	HardLinkedData:    "hard-linked data file",
	DanglingSymlink:   "dangling symlink",
	NonRegularData:    "data path is not a regular file",
	SymlinkSidecar:    "sidecar is a symlink",
	HardLinkedSidecar: "hard-linked sidecar",
	NonRegularSidecar: "sidecar is not a regular file",
	MountPoint:        "file is a mount point",
	IdentityChanged:   "file identity changed while locking",
	InvalidName:       "path does not name a file",
}

// String describes the kind without naming any path.
func (k AliasKind) String() string {
	if int(k) < len(aliasKindNames) && aliasKindNames[k] != "" {
		return aliasKindNames[k]
	}
	return fmt.Sprintf("alias kind %d", uint8(k))
}

// AliasError reports a refused alias. It matches ErrUnsafeAlias.
type AliasError struct {
	Kind AliasKind
	Path string // the offending path (data file or sidecar)
}

func (e *AliasError) Error() string {
	return "lockfile: unsafe alias (" + e.Kind.String() + "): " + e.Path
}

// Is makes every AliasError match ErrUnsafeAlias.
func (e *AliasError) Is(target error) bool { return target == ErrUnsafeAlias }

// MissingError reports a data file that does not exist although the
// caller asked for an existing one (Options.ExistingOnly). It matches
// ErrNoDataFile and, through Unwrap, fs.ErrNotExist.
type MissingError struct {
	Path string // the resolved data path
}

func (e *MissingError) Error() string { return "lockfile: data file does not exist: " + e.Path }

// Is makes every MissingError match ErrNoDataFile.
func (e *MissingError) Is(target error) bool { return target == ErrNoDataFile }

// Unwrap gives the system's "no such file" error (ENOENT,
// ERROR_FILE_NOT_FOUND, or fs.ErrNotExist where there is neither), so that
// errors.Is(err, fs.ErrNotExist) holds and the error reads as an open's.
func (e *MissingError) Unwrap() error { return errNotExist }

// FilesystemError reports a refused filesystem. It matches ErrUnsupportedFilesystem.
type FilesystemError struct {
	// Magic is statfs f_type on Linux; on macOS and FreeBSD a code for
	// f_fstypename and the mount flags; on Windows the drive type
	// GetDriveType gave (4 is a network drive), or 0 for a network path.
	Magic uint32
	Name  string // short name of the type, or "unknown"
	Path  string
}

func (e *FilesystemError) Error() string {
	return fmt.Sprintf("lockfile: unsupported filesystem %s (0x%x): %s", e.Name, e.Magic, e.Path)
}

// Is makes every FilesystemError match ErrUnsupportedFilesystem.
func (e *FilesystemError) Is(target error) bool { return target == ErrUnsupportedFilesystem }

// LateReleaseError reports a waiting acquisition that obtained the lock
// after its deadline and then failed to release it. The acquisition
// failed (it matches ErrTimedOut), but this process may still hold the
// lock, which a plain ErrTimedOut would hide; Err is the release's error.
type LateReleaseError struct {
	Path string // the resolved data path whose lock came late
	Err  error
}

func (e *LateReleaseError) Error() string {
	return "lockfile: wait for the lock timed out, and releasing the lock obtained after it failed: " + e.Path + ": " + e.Err.Error()
}

// Is makes every LateReleaseError match ErrTimedOut.
func (e *LateReleaseError) Is(target error) bool { return target == ErrTimedOut }

// Unwrap gives the release's error.
func (e *LateReleaseError) Unwrap() error { return e.Err }

// RecheckReleaseError reports an acquisition whose checks under the lock
// refused the lock it had obtained (Cause: the sidecar or the data path
// changed, or the data file an ExistingOnly caller needs is gone) and
// whose release then failed (Err). The acquisition failed with Cause, but
// this process may still hold the lock, which Cause alone would hide.
// errors.Is and errors.As see both Cause and Err.
type RecheckReleaseError struct {
	Path  string // the resolved data path whose lock was refused
	Cause error
	Err   error
}

func (e *RecheckReleaseError) Error() string {
	return "lockfile: refused under the lock (" + e.Cause.Error() + "), and releasing the lock failed: " + e.Path + ": " + e.Err.Error()
}

// Unwrap gives the refusal and the release's error.
func (e *RecheckReleaseError) Unwrap() []error { return []error{e.Cause, e.Err} }

// releaseUnused releases l, which the acquisition obtained but will not
// return, with release (Options.ReleaseUnused) or else Unlock.
func releaseUnused(l *Lock, release func(*Lock) error) error {
	if release == nil {
		return l.Unlock()
	}
	return release(l)
}

// releaseLate releases l, which a waiting acquisition obtained after its
// deadline (releaseUnused), and gives the acquisition's result.
func releaseLate(l *Lock, release func(*Lock) error) error {
	if err := releaseUnused(l, release); err != nil {
		return &LateReleaseError{Path: l.DataPath(), Err: err}
	}
	return ErrTimedOut
}

// JoinLine is errors.Join on one line: the messages are separated by "; "
// instead of newlines, so a log line or a CLI message stays one line.
// Nil errors are dropped; it returns nil when all are.
func JoinLine(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return &lineJoin{kept}
}

type lineJoin struct{ errs []error }

func (e *lineJoin) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e *lineJoin) Unwrap() []error { return e.errs }
