package exclusive

import (
	"errors"
	"fmt"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
)

// Sentinels for errors.Is. A session error matches at most one acquisition
// sentinel; an *AcquisitionError with none of them is an operating-system
// error (Code "os_error"), whose chain still matches the errno.
var (
	// ErrInvalidWait: the Wait was negative. Returned before any file
	// system access.
	ErrInvalidWait = errors.New("exclusive: invalid wait: negative duration")
	// ErrNilCallback: With or Do was given a nil callback. Returned before
	// any file system access.
	ErrNilCallback = errors.New("exclusive: nil callback")
	// ErrInvalidOptions: the session's Options contradict themselves (see
	// Options.Table); every *OptionsError matches it. Returned before any
	// file system access.
	ErrInvalidOptions = errors.New("exclusive: invalid options")
	// ErrBusy: another owner held the lock and the wait was Immediate.
	ErrBusy = errors.New("exclusive: table is busy: another owner holds its lock")
	// ErrTimedOut: the lock stayed held until the wait ended, or came
	// only after the end and was released unused.
	ErrTimedOut = errors.New("exclusive: timed out waiting for the table's lock")
	// ErrUnsupportedFilesystem: the file is on a network, cluster, FUSE,
	// overlay or unknown filesystem, where the lock cannot be trusted.
	ErrUnsupportedFilesystem = errors.New("exclusive: unsupported filesystem")
	// ErrUnsafeAlias: the path could reach the file under two locks
	// (hard links, dangling symlinks, odd sidecars, mount points).
	ErrUnsafeAlias = errors.New("exclusive: unsafe alias")
	// ErrUnsupportedTarget: this operating system is not supported.
	ErrUnsupportedTarget = errors.New("exclusive: unsupported target platform")
	// ErrQuarantined: an earlier session on this file failed to clean up in
	// this process; the file stays refused (and possibly locked) until the
	// process exits.
	ErrQuarantined = errors.New("exclusive: file is quarantined after a failed cleanup in this process")
	// ErrAlreadyOpen: the table is open in this process outside a session.
	ErrAlreadyOpen = errors.New("exclusive: table is already open in this process outside a session")
	// ErrNeedsRepair is dets.ErrNeedsRepair: a NoRepair session found a file
	// that was not closed properly. errors.Is matches either name.
	ErrNeedsRepair = dets.ErrNeedsRepair
	// ErrCleanupFailed matches every *CleanupError.
	ErrCleanupFailed = errors.New("exclusive: session cleanup failed")
)

// OptionsError says which settings of Options conflict. It matches
// ErrInvalidOptions and dets.ErrInvalidOptions; ForceRepair in a read-only
// session also matches dets.ErrReadOnly, the error dets.Open gives it.
type OptionsError struct {
	Field  string // the Options field in conflict: "Repair"
	Reason string // what conflicts; it names no path
	// readOnly: a forced repair asked of a read-only session.
	readOnly bool
}

func (e *OptionsError) Error() string {
	return "exclusive: invalid options: " + e.Field + ": " + e.Reason
}

// Is matches ErrInvalidOptions, dets.ErrInvalidOptions, and for a
// read-only forced repair dets.ErrReadOnly.
func (e *OptionsError) Is(target error) bool {
	return target == ErrInvalidOptions || target == dets.ErrInvalidOptions ||
		e.readOnly && target == dets.ErrReadOnly
}

// AcquisitionError: the session did not get ownership; the table was not
// opened and the callback did not run. With Nested set it belongs to a
// session started inside another session's callback: the outer session
// was acquired, its callback ran and returned this error.
type AcquisitionError struct {
	// Reason is one of the acquisition sentinels (ErrBusy, ErrTimedOut,
	// ErrUnsupportedFilesystem, ErrUnsafeAlias, ErrUnsupportedTarget,
	// ErrQuarantined, ErrAlreadyOpen), or nil for an operating-system error.
	Reason error
	// Err is the underlying detail; it may name paths (for trusted logs).
	Err error
	// Nested is set on what errors.As finds through a *SessionError of
	// stage CallbackFailure (a copy; the callback's own value is left
	// alone). A session's own acquisition failure is never nested.
	Nested bool
}

func (e *AcquisitionError) Error() string {
	if e.Err == nil {
		return "exclusive: acquisition failed: " + trimPrefix(e.Reason)
	}
	return "exclusive: acquisition failed: " + trimPrefix(e.Err)
}

// Is matches the Reason sentinel.
func (e *AcquisitionError) Is(target error) bool { return e.Reason != nil && target == e.Reason }

// Unwrap returns the detail, so errno values and *fs.PathError are reachable.
func (e *AcquisitionError) Unwrap() error { return e.Err }

// Stage says which step of an owned session failed.
type Stage uint8

// Session stages.
const (
	OpenFailure     Stage = iota + 1 // dets.Open (including repair) failed
	CallbackFailure                  // the callback returned an error
	// CloseFailure: after a successful callback, closing a read-only table
	// failed. Nothing was unwritten, so the lock was released and the file
	// is not quarantined.
	CloseFailure
)

func (s Stage) String() string {
	switch s {
	case OpenFailure:
		return "open failed"
	case CallbackFailure:
		return "callback failed"
	case CloseFailure:
		return "closing the read-only table failed"
	}
	return fmt.Sprintf("Stage(%d)", uint8(s))
}

// SessionError: ownership was acquired, then opening the table, the
// callback, or closing a read-only table failed. The table was closed and
// the lock released before it was returned (otherwise a *CleanupError is
// returned instead).
type SessionError struct {
	Stage Stage
	Err   error
	// Close is set when, after the callback failed, closing the read-only
	// table failed too, with an error other than the callback's (a close
	// that repeats the read error the callback returned adds nothing). It
	// quarantined nothing. Nil otherwise.
	Close error
}

func (e *SessionError) Error() string {
	s := "exclusive: " + e.Stage.String() + ": " + e.Err.Error()
	if e.Close != nil {
		s += " (then " + CloseFailure.String() + ": " + e.Close.Error() + ")"
	}
	return s
}

// As makes errors.As find an *AcquisitionError inside a callback failure
// as a copy with Nested set, so that a nested session's failure to start
// is never taken for this session's own.
func (e *SessionError) As(target any) bool {
	p, ok := target.(**AcquisitionError)
	if !ok || e.Stage != CallbackFailure {
		return false
	}
	var inner *AcquisitionError
	if !errors.As(e.Err, &inner) {
		return false
	}
	c := *inner
	c.Nested = true
	*p = &c
	return true
}

// Unwrap exposes Err and, if set, Close.
func (e *SessionError) Unwrap() []error {
	if e.Close == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Close}
}

// CleanupError: closing a read-write table or releasing the lock failed.
// The file is quarantined in this process. Primary is the error the session
// would have returned otherwise: nil after a successful callback. A lock
// released unused, without the table being opened, gives the error of
// that acquisition: the *AcquisitionError of ErrTimedOut when the lock
// came after the deadline; when the checks under the lock refused it,
// what that refusal gives alone (an *AcquisitionError such as
// ErrUnsafeAlias, or the OpenFailure *SessionError of a read-only
// session's missing file).
type CleanupError struct {
	Primary  error
	Failures []error
}

func (e *CleanupError) Error() string {
	s := "exclusive: session cleanup failed: " + lockfile.JoinLine(e.Failures...).Error()
	if e.Primary != nil {
		s += " (after: " + e.Primary.Error() + ")"
	}
	return s
}

// Is matches ErrCleanupFailed.
func (e *CleanupError) Is(target error) bool { return target == ErrCleanupFailed }

// Unwrap exposes the primary error and every failure.
func (e *CleanupError) Unwrap() []error {
	errs := make([]error, 0, 1+len(e.Failures))
	if e.Primary != nil {
		errs = append(errs, e.Primary)
	}
	return append(errs, e.Failures...)
}

func trimPrefix(err error) string {
	s := err.Error()
	for _, p := range []string{"exclusive: ", "lockfile: "} {
		if len(s) > len(p) && s[:len(p)] == p {
			return s[len(p):]
		}
	}
	return s
}

// CodedError is implemented by errors of packages built on this one (kinds)
// that carry their own stable code and path-free sentence; Code and Message
// report them. exclusive cannot import those packages, so they opt in.
type CodedError interface {
	error
	SafeCode() string
	SafeMessage() string
}

// acquisitionError classifies a lockfile error.
func acquisitionError(err error) error {
	var reason error
	switch {
	case errors.Is(err, lockfile.ErrBusy):
		reason = ErrBusy
	case errors.Is(err, lockfile.ErrTimedOut):
		reason = ErrTimedOut
	case errors.Is(err, lockfile.ErrUnsupportedFilesystem):
		reason = ErrUnsupportedFilesystem
	case errors.Is(err, lockfile.ErrUnsafeAlias):
		reason = ErrUnsafeAlias
	case errors.Is(err, lockfile.ErrUnsupportedTarget):
		reason = ErrUnsupportedTarget
	}
	return &AcquisitionError{Reason: reason, Err: err}
}
