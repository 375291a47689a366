package lockfile

import (
	"sync"
	"time"

	"golang.org/x/sys/windows"
)

// The exported API on Windows that is not shared with Unix (errors.go
// holds what is): the same names as lockfile.go, which holds the Unix lease
// and is not built here, so that package exclusive compiles unchanged.
// Only the lock behind it differs; see lockfile_windows.go.

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
	// ReleaseUnused, if set, releases in place of Unlock a lock that the
	// acquisition obtained but will not return, and must release it as
	// Unlock does: a lock obtained after the deadline (a failure comes
	// back inside a *LateReleaseError), or one the checks under the lock
	// refused (inside a *RecheckReleaseError). Package exclusive releases
	// under its registry with it, so that the quarantine of a failed
	// release is in place before another session of the process can take
	// the lock that release dropped.
	ReleaseUnused func(*Lock) error
	// ReleaseAbandoned is never called on Windows: no waiter blocks in
	// the kernel there, so none is left behind by a session that gives
	// up (see lockfile_windows.go).
	ReleaseAbandoned func(*Lock)
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

// errNotExist is what a *MissingError wraps.
var errNotExist error = windows.ERROR_FILE_NOT_FOUND
