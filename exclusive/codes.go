package exclusive

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
)

// detsCodes gives each error of package dets its code and sentence (the
// table in the package doc). ErrNoSuchKey precedes ErrBadArgument, which it
// also matches.
var detsCodes = [...]struct {
	err            error
	code, sentence string
}{
	{dets.ErrNeedsRepair, "needs_repair", "The table was not closed properly and needs repair."},
	{dets.ErrNotClosed, "not_closed", "The table was not closed properly and cannot be repaired in a read-only session."},
	{dets.ErrNotDETS, "not_dets", "The file is not a DETS table."},
	{dets.ErrUnsupportedVersion, "unsupported_version", "The file is a DETS table of format 8 or older, which is no longer supported."},
	{dets.ErrBadTypeCode, "bad_type_code", "The table's header has an invalid table type."},
	{dets.ErrBadHashMethod, "bad_hash_method", "The table's header names an unknown hash method."},
	{dets.ErrUnsupportedHash, "unsupported_hash", "The table hashes its keys with the legacy phash, which is not supported."},
	{dets.ErrKindMismatch, "kind_mismatch", "The table's kind differs from the one requested."},
	{dets.ErrKeyPosMismatch, "keypos_mismatch", "The table's key position differs from the one requested."},
	{dets.ErrFormatMismatch, "format_mismatch", "The table's file format differs from the one requested."},
	{dets.ErrInvalidOptions, "invalid_table_options", "The table options are invalid."},
	{dets.ErrNotSupported, "not_supported", "The request needs a feature this build does not support."},
	{dets.ErrAlreadyOpen, "double_open", "The table file is already open in this process, and a second handle could write to it."},
	{dets.ErrCorrupt, "corrupt", "The table file is corrupt."},
	{dets.ErrMapFault, "map_fault", "A page of the table file could not be read through its memory map (a full disk or an I/O error)."},
	{dets.ErrFileTooLarge, "file_too_large", "The table file has reached its size limit of about 2 GB."},
	{dets.ErrFormatLimit, "format_limit", "The table exceeds a limit of the otp9 format (file size, object or key count, or slot count), so it cannot be converted to otp9."},
	{dets.ErrReadOnly, "read_only", "The table is read-only."},
	{dets.ErrClosed, "table_closed", "The table was used after it was closed."},
	{dets.ErrBadObject, "bad_object", "An object is not a tuple long enough for the key position, or cannot be encoded."},
	{dets.ErrNoSuchKey, "no_such_key", "No object has that key."},
	{dets.ErrNoSuchSlot, "no_such_slot", "The table has no slot of that number."},
	{dets.ErrImageTooShort, "image_too_short", "The file is too short to hold a DETS header."},
	{dets.ErrCannotRedact, "cannot_redact", "An object of the table cannot be redacted (a compressed term); nothing was written."},
	{dets.ErrBadArgument, "bad_argument", "An argument of a table operation is invalid."},
}

// reasonCodes gives each acquisition sentinel its code and sentence.
var reasonCodes = [...]struct {
	err            error
	code, sentence string
}{
	{ErrBusy, "busy", "The table is busy: another owner holds its lock."},
	{ErrTimedOut, "timed_out", "Timed out waiting for the table's lock."},
	{ErrUnsupportedFilesystem, "unsupported_filesystem", "The table is on an unsupported filesystem; use a local filesystem."},
	{ErrUnsafeAlias, "unsafe_alias", "The table path is an unsafe alias."},
	{ErrUnsupportedTarget, "unsupported_target", "Exclusive sessions are not supported on this operating system."},
	{ErrQuarantined, "quarantined", "The table is quarantined in this process after a failed cleanup; restart the process."},
	{ErrAlreadyOpen, "already_open", "The table is already open in this process outside an exclusive session."},
}

// coded is an error found to have a code of its own.
type coded struct {
	err            error
	code, sentence string
}

// outermost walks err's tree in errors.Is order (each error before the
// ones it wraps, depth first) and returns the first error with a code of
// its own: the session's outcome before its causes, and of a cause its
// most specific wrapper (dets.ErrNeedsRepair before the corruption that
// made the file need repair).
func outermost(err error) (coded, bool) {
	if err == nil {
		return coded{}, false
	}
	if c, ok := classify(err); ok {
		return c, true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return outermost(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if c, ok := outermost(e); ok {
				return c, true
			}
		}
	}
	return coded{}, false
}

// classify gives err's own code, without looking at what it wraps (except
// for the causes a session error reports).
func classify(err error) (coded, bool) {
	switch e := err.(type) {
	case *CleanupError:
		return coded{err, "cleanup_failed", fmt.Sprintf("Closing the table or releasing its lock failed (%d failure(s)); the table is quarantined in this process.", len(e.Failures))}, true
	case *AcquisitionError:
		return acquisitionCode(e), true
	case *SessionError:
		return sessionCode(e), true
	case *OptionsError:
		return coded{err, "invalid_options", "The session options conflict (" + e.Field + ": " + e.Reason + ")."}, true
	case CodedError:
		return coded{err, e.SafeCode(), e.SafeMessage()}, true
	}
	switch err {
	case ErrInvalidWait:
		return coded{err, "invalid_wait", "The wait duration is negative."}, true
	case ErrNilCallback:
		return coded{err, "invalid_callback", "No session callback was given."}, true
	case ErrInvalidOptions:
		return coded{err, "invalid_options", "The session options conflict."}, true
	case ErrCleanupFailed:
		return coded{err, "cleanup_failed", "Closing the table or releasing its lock failed; the table is quarantined in this process."}, true
	}
	for _, r := range reasonCodes {
		if err == r.err {
			return coded{err, r.code, r.sentence}, true
		}
	}
	is, _ := err.(interface{ Is(error) bool })
	for _, d := range detsCodes {
		if err == d.err || is != nil && is.Is(d.err) {
			return coded{err, d.code, d.sentence}, true
		}
	}
	return coded{}, false
}

func acquisitionCode(e *AcquisitionError) coded {
	for _, r := range reasonCodes {
		if e.Reason != r.err {
			continue
		}
		c := coded{e, r.code, r.sentence}
		var fe *lockfile.FilesystemError
		var le *lockfile.AliasError
		switch {
		case r.err == ErrUnsupportedFilesystem && errors.As(e.Err, &fe):
			c.sentence = "The table is on an unsupported filesystem (" + fe.Name + "); use a local filesystem."
		case r.err == ErrUnsafeAlias && errors.As(e.Err, &le):
			c.sentence = "The table path is an unsafe alias: " + le.Kind.String() + "."
		}
		return c
	}
	return coded{e, "os_error", "Acquiring the table's lock failed: " + errnoText(e.Err) + "."}
}

func sessionCode(e *SessionError) coded {
	cause, known := outermost(e.Err)
	switch e.Stage {
	case OpenFailure:
		if known {
			return coded{e, cause.code, cause.sentence}
		}
		return coded{e, "open_failed", "Opening the table failed: " + errnoText(e.Err) + "."}
	case CloseFailure:
		s := "Closing the read-only table failed; its lock was released."
		if known {
			s = "Closing the read-only table failed (its lock was released): " + clause(cause.sentence)
		}
		return coded{e, "close_failed", s}
	}
	s := "The session callback returned an error."
	if known {
		switch cause.err.(type) {
		case *AcquisitionError, *SessionError, *CleanupError:
			s = "The session callback failed: a session it started failed: " + clause(cause.sentence)
		default:
			s = "The session callback failed: " + clause(cause.sentence)
		}
	}
	return coded{e, "callback_failed", s}
}

// clause lowercases a sentence's first letter to continue another one,
// unless it starts an acronym ("DETS").
func clause(s string) string {
	if len(s) > 1 && 'A' <= s[0] && s[0] <= 'Z' && !('A' <= s[1] && s[1] <= 'Z') {
		return string(s[0]+'a'-'A') + s[1:]
	}
	return s
}

// Code returns a short, stable, path-free code for err, for programs and
// exit statuses; the package doc lists them all. It is "ok" for nil, the
// code of the session's outcome for a session error (an open failure gives
// its cause's code, such as needs_repair), the code of a dets error, the
// SafeCode of a CodedError, and "error" for anything else.
//
// The outcome comes first: a callback that fails with dets.ErrCorrupt, or
// with the error of a nested session that did not start, is
// callback_failed; CauseCode names the cause.
func Code(err error) string {
	if err == nil {
		return "ok"
	}
	if c, ok := outermost(err); ok {
		return c.code
	}
	return "error"
}

// CauseCode returns the code of what made a session fail: for a
// *SessionError the code of the failed step's own error (the callback's,
// the open's or the read-only close's), or "error" if that has no code;
// for a *CleanupError the CauseCode of its primary error, or
// cleanup_failed after a successful callback. For any other error it is
// Code(err).
func CauseCode(err error) string {
	c, ok := outermost(err)
	if !ok {
		return Code(err)
	}
	switch e := c.err.(type) {
	case *SessionError:
		if cause, ok := outermost(e.Err); ok {
			return cause.code
		}
		return "error"
	case *CleanupError:
		if e.Primary != nil {
			return CauseCode(e.Primary)
		}
	}
	return c.code
}

// Message returns one human sentence for err that names no path and quotes
// no text from the callback's error, safe to show to end users; a cause
// with a code of its own (a dets error, a CodedError's SafeMessage) is
// described after the outcome. Paths and details belong in trusted logs
// (err.Error()).
func Message(err error) string {
	if err == nil {
		return "The session completed."
	}
	if c, ok := outermost(err); ok {
		return c.sentence
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
