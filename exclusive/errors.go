package exclusive

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

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
	// ErrTimedOut: the lock stayed held until the wait ended.
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
// opened and the callback did not run.
type AcquisitionError struct {
	// Reason is one of the acquisition sentinels (ErrBusy, ErrTimedOut,
	// ErrUnsupportedFilesystem, ErrUnsafeAlias, ErrUnsupportedTarget,
	// ErrQuarantined, ErrAlreadyOpen), or nil for an operating-system error.
	Reason error
	// Err is the underlying detail; it may name paths (for trusted logs).
	Err error
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
	// table failed too (often with the same read error the callback saw).
	// It quarantined nothing. Nil otherwise.
	Close error
}

func (e *SessionError) Error() string {
	s := "exclusive: " + e.Stage.String() + ": " + e.Err.Error()
	if e.Close != nil {
		s += " (then " + trimPrefix(e.Close) + ")"
	}
	return s
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
// would have returned otherwise (nil after a successful callback).
type CleanupError struct {
	Primary  error
	Failures []error
}

func (e *CleanupError) Error() string {
	s := "exclusive: session cleanup failed: " + errors.Join(e.Failures...).Error()
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

// Code returns a short, stable, path-free code for err: "ok" for nil, then
// one of invalid_wait, invalid_callback, busy, timed_out, unsupported_filesystem, unsafe_alias,
// unsupported_target, quarantined, already_open, os_error, needs_repair,
// not_dets, corrupt, open_failed, callback_failed, cleanup_failed, or "error"
// for an error that did not come from this package.
func Code(err error) string {
	if err == nil {
		return "ok"
	}
	var ce *CleanupError
	var ae *AcquisitionError
	var se *SessionError
	switch {
	case errors.As(err, &ce):
		return "cleanup_failed"
	case errors.Is(err, ErrInvalidWait):
		return "invalid_wait"
	case errors.Is(err, ErrNilCallback):
		return "invalid_callback"
	case errors.Is(err, ErrInvalidOptions):
		return "invalid_options"
	case errors.As(err, &ae):
		switch ae.Reason {
		case ErrBusy:
			return "busy"
		case ErrTimedOut:
			return "timed_out"
		case ErrUnsupportedFilesystem:
			return "unsupported_filesystem"
		case ErrUnsafeAlias:
			return "unsafe_alias"
		case ErrUnsupportedTarget:
			return "unsupported_target"
		case ErrQuarantined:
			return "quarantined"
		case ErrAlreadyOpen:
			return "already_open"
		}
		return "os_error"
	case errors.As(err, &se):
		switch se.Stage {
		case CallbackFailure:
			return "callback_failed"
		case CloseFailure:
			return "close_failed"
		}
		switch {
		case errors.Is(se.Err, dets.ErrNeedsRepair):
			return "needs_repair"
		case errors.Is(se.Err, dets.ErrNotDETS):
			return "not_dets"
		case errors.Is(se.Err, dets.ErrCorrupt):
			return "corrupt"
		}
		return "open_failed"
	}
	var coded CodedError
	if errors.As(err, &coded) {
		return coded.SafeCode()
	}
	return "error"
}

// Message returns one human sentence for err that names no path and quotes
// no text from the callback, safe to show to end users. Paths and details
// belong in trusted logs (err.Error()).
func Message(err error) string {
	var ae *AcquisitionError
	var ce *CleanupError
	var se *SessionError
	switch code := Code(err); code {
	case "ok":
		return "The session completed."
	case "invalid_wait":
		return "The wait duration is negative."
	case "invalid_callback":
		return "No session callback was given."
	case "invalid_options":
		var oe *OptionsError
		if errors.As(err, &oe) {
			return "The session options conflict (" + oe.Field + ": " + oe.Reason + ")."
		}
		return "The session options conflict."
	case "busy":
		return "The table is busy: another owner holds its lock."
	case "timed_out":
		return "Timed out waiting for the table's lock."
	case "unsupported_filesystem":
		var fe *lockfile.FilesystemError
		if errors.As(err, &fe) {
			return "The table is on an unsupported filesystem (" + fe.Name + "); use a local filesystem."
		}
		return "The table is on an unsupported filesystem; use a local filesystem."
	case "unsafe_alias":
		var le *lockfile.AliasError
		if errors.As(err, &le) {
			return "The table path is an unsafe alias: " + le.Kind.String() + "."
		}
		return "The table path is an unsafe alias."
	case "unsupported_target":
		return "Exclusive sessions are not supported on this operating system."
	case "quarantined":
		return "The table is quarantined in this process after a failed cleanup; restart the process."
	case "already_open":
		return "The table is already open in this process outside an exclusive session."
	case "os_error":
		errors.As(err, &ae)
		return "Acquiring the table's lock failed: " + errnoText(ae.Err) + "."
	case "needs_repair":
		return "The table was not closed properly and needs repair."
	case "not_dets":
		return "The file is not a DETS table."
	case "corrupt":
		return "The table file is corrupt."
	case "open_failed":
		errors.As(err, &se)
		return "Opening the table failed: " + errnoText(se.Err) + "."
	case "callback_failed":
		return "The session callback returned an error."
	case "close_failed":
		return "Closing the read-only table failed; its lock was released."
	case "cleanup_failed":
		errors.As(err, &ce)
		return fmt.Sprintf("Closing the table or releasing its lock failed (%d failure(s)); the table is quarantined in this process.", len(ce.Failures))
	}
	return "An error occurred outside the exclusive session."
}

// errnoText names an errno found in err's chain, or says nothing specific.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "file does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	}
	return "unexpected error"
}
