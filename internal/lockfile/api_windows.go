package lockfile

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/windows"
)

// The exported API on Windows, declared as in lockfile.go (which holds the
// Unix lease and is not built here) so that package exclusive compiles
// unchanged. Only the lock behind it differs; see lockfile_windows.go.

// SidecarSuffix is the Unix sidecar's suffix. Windows has no sidecar; the
// constant exists so that code naming it compiles.
const SidecarSuffix = ".slate.lock"

// PollInterval is the longest pause between two lock attempts while waiting.
const PollInterval = 20 * time.Millisecond

// Errors. Each acquisition error matches exactly one of these with errors.Is.
var (
	// ErrBusy: another owner (process, or session in this process) holds
	// the lock and the caller asked for a single attempt.
	ErrBusy = errors.New("lockfile: lock is held by another owner")
	// ErrTimedOut: the lock stayed held until the wait deadline passed, or it
	// was obtained too late and released again.
	ErrTimedOut = errors.New("lockfile: wait for the lock timed out")
	// ErrUnsupportedFilesystem: the data file is on a network share, on a
	// drive that is not local, or on a filesystem this package does not
	// know. See *FilesystemError.
	ErrUnsupportedFilesystem = errors.New("lockfile: unsupported filesystem")
	// ErrUnsafeAlias: the path could reach the file under more than one
	// lock name, or the namespace changed under the lock. See *AliasError.
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

// Alias kinds. The sidecar kinds never occur on Windows.
const (
	HardLinkedData    AliasKind = iota + 1 // data file has more than one hard link
	DanglingSymlink                        // data path is a symlink to nothing (or a loop)
	NonRegularData                         // data path is a directory, device or pipe
	SymlinkSidecar                         // sidecar is a symlink
	HardLinkedSidecar                      // sidecar has more than one hard link
	NonRegularSidecar                      // sidecar is not a regular file
	MountPoint                             // data file or sidecar is itself a mount point
	IdentityChanged                        // data path changed while locking
	InvalidName                            // final path element names no file
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
	Path string // the offending path
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

// Unwrap gives ERROR_FILE_NOT_FOUND, which matches fs.ErrNotExist, so
// that the error reads as an open's.
func (e *MissingError) Unwrap() error { return windows.ERROR_FILE_NOT_FOUND }

// FilesystemError reports a refused filesystem. It matches ErrUnsupportedFilesystem.
type FilesystemError struct {
	// Magic is, on Windows, the drive type GetDriveType gave for the
	// volume (4 is a network drive), or 0 for a network path.
	Magic uint32
	Name  string // the filesystem's name (NTFS, ...), or what was refused
	Path  string
}

func (e *FilesystemError) Error() string {
	return fmt.Sprintf("lockfile: unsupported filesystem %s (0x%x): %s", e.Name, e.Magic, e.Path)
}

// Is makes every FilesystemError match ErrUnsupportedFilesystem.
func (e *FilesystemError) Is(target error) bool { return target == ErrUnsupportedFilesystem }

// Options controls one acquisition.
type Options struct {
	// Wait is how long to keep retrying while the lock is held elsewhere.
	// Zero (or negative) means a single attempt, which fails with ErrBusy.
	Wait time.Duration
	// Refuse, if set, is asked about each resolved data path before any
	// lock attempt on it; a non-nil result ends the acquisition with that
	// error.
	Refuse func(data string) error
	// OpenData is accepted and ignored on Windows: no descriptor is kept
	// (TakeDataFD reports none) and the caller opens the path.
	OpenData bool
	// ExistingOnly: a missing data file ends the acquisition with
	// *MissingError (ErrNoDataFile, fs.ErrNotExist), after the lock was
	// taken and the path checked again under it, since a session holding
	// it may be creating or replacing the file. The semaphore leaves
	// nothing behind either way.
	ExistingOnly bool
	// Hooks replaces system calls in tests; nil in production.
	Hooks *Hooks
}

// Hooks lets tests inject faults. Every field may be nil. The fields are
// those of the Unix build, so that tests compile on both; on Windows only
// FSType, BeforeFlock and Sleep are used.
type Hooks struct {
	// Flock is not used on Windows.
	Flock func(fd int, how int) error
	// Close is not used on Windows.
	Close func(fd int) error
	// BeforeFlock runs before each wait on the semaphore, with its name.
	BeforeFlock func(sidecar string)
	// FSType maps the drive type GetDriveType reported to the one to judge.
	FSType func(magic uint32) uint32
	// Sleep replaces time.Sleep between attempts.
	Sleep func(d time.Duration)
}

// ID identifies a lock; equal IDs mean the same lock. On Windows it is the
// first 128 bits of the hash the semaphore is named from.
type ID struct{ Dev, Ino uint64 }

// Target is a resolved data path, checked for aliases and filesystem but
// not yet locked.
type Target struct {
	raw  string
	Data string // the data file's final path, without the \\?\ prefix
	// Sidecar is the semaphore's name: there is no lock file on Windows.
	Sidecar string
	folded  string // Data, case-folded (canonicalLockPath)
	id      ID     // the lock's ID (lockName)
	// dataID identifies the data file (volume serial, file index) if it
	// existed when resolved.
	dataID     ID
	dataExists bool
}

// Lock is a held semaphore. Its handle is closed only by Unlock.
type Lock struct {
	mu       sync.Mutex
	h        windows.Handle // the semaphore; 0 once released
	target   *Target
	released bool
}

// DataPath is the resolved data path to open.
func (l *Lock) DataPath() string { return l.target.Data }

// SidecarPath is, on Windows, the name of the semaphore: no file exists.
func (l *Lock) SidecarPath() string { return l.target.Sidecar }

// ID identifies the lock.
func (l *Lock) ID() ID { return l.target.id }

// DataID identifies the data file as re-checked under the lock (volume
// serial number and file index); ok is false when there was no data file.
func (l *Lock) DataID() (id ID, ok bool) { return l.target.dataID, l.target.dataExists }

// TakeDataFD never has a descriptor to give on Windows (Options.OpenData
// is ignored): ok is always false.
func (l *Lock) TakeDataFD() (fd int, size int64, ok bool) { return -1, 0, false }
