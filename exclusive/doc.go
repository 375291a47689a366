// Package exclusive runs work on a DETS table inside a cross-process
// exclusive session:
//
//	acquire lock → open table → callback → close table → release lock
//
// With (and Do, for a callback that returns a value) succeed only after the
// table was closed and the lock released. Locked takes the same lock without
// opening the table, for work on the file itself (a backup copy, or
// dets.Repair of a file whose header is destroyed). Use sessions whenever separate
// processes share one DETS file: the file format has no locking of its own,
// and two writers corrupt it.
//
// # The lock
//
// Ownership is flock(2) LOCK_EX on a sidecar file next to the data file,
// <resolved-data-path>.slate.lock (the name Slate uses, so Go and Gleam
// programs that both use flock exclude each other). The sidecar is never
// deleted; its presence means nothing, only the kernel lock does. The kernel
// drops the lock when the owning process exits or is killed; the next
// session may then find the table not closed properly: with Repair
// dets.NoRepair it fails with ErrNeedsRepair (the file untouched), with
// dets.AutoRepair it repairs while holding the lock. Repair can lose data:
// back up a file you need before repairing it.
//
// After a session the process keeps the sidecar's descriptor open, unlocked,
// for about one to two seconds (at most 16 files), so that the next session
// on the file skips opening it; every check still runs under the lock. The
// descriptor holds no lock, but meanwhile it keeps the filesystem busy
// (umount fails with EBUSY).
//
// Symlinks (of the parent directory and of the file) are resolved before
// the sidecar is chosen, and the resolved path is the one the table is
// opened at (a read-write session on an existing file is handed the
// descriptor the lock opened while re-checking that path), so relative,
// absolute and symlinked names of one file share one lock. The parent
// directory must exist. Refused before locking, as ErrUnsafeAlias:
// data files with more than one hard link, dangling symlinks, sidecars that
// are symlinks, hard links or not regular files, and data files or sidecars
// that are themselves mount points (mount a directory, not the file). Only
// known local filesystems are accepted; network, cluster, FUSE and overlay
// filesystems give ErrUnsupportedFilesystem. Linux, macOS and FreeBSD take
// the flock lease above; Windows takes a named kernel semaphore derived from
// the file's final path instead (the same lease: one owner, dropped when
// the owner dies; internal/lockfile explains why not a file lock), which
// leaves no sidecar. On Windows a table already open in this process
// through dets.Open is not detected (dets has no file identities there).
// ErrUnsupportedTarget elsewhere. There is no unlocked fallback.
//
// # Waiting
//
// Immediate tries once and gives ErrBusy. WaitUpTo(d) waits until one
// monotonic deadline and gives ErrTimedOut; WaitUpTo(0) is Immediate and a
// negative duration gives ErrInvalidWait. There is no infinite wait. Once
// the lock is held the deadline no longer applies, but it must be held in
// time: a lock that comes after the deadline, however slightly (a stalled
// system call), is released without opening the table, and the session
// gives ErrTimedOut.
//
// A waiting session blocks in the kernel, which wakes it when the lock is
// released, so sessions of many processes contending for one file take
// turns instead of the last owner taking the lock again and again. This
// holds one OS thread per file waited on in the process (a session that
// times out leaves it blocked until the lock is released, then gives the
// lock straight back; should that fail, the file is quarantined and the
// failure logged with cause=abandoned_wait, since no session is left to
// return it to); a second session of the process waiting for the same
// file, and sessions beyond a small bound, poll at most every 20 ms.
// Immediate does not queue: it takes the lock only if it is free at that
// instant, so under sustained contention it mostly gives ErrBusy. Use a
// wait to take turns.
//
// # Options
//
// Options.Repair and Options.ReadOnly merge with the same fields of
// Options.Table: what one side sets (a Repair other than NoRepair, a
// ReadOnly true) applies, and two different repair modes are an
// *OptionsError, as is an unknown mode. ReadOnly with AutoRepair follows
// dets: a closed file opens read-only, a file that needs repair is refused
// with dets.ErrNotClosed and left untouched. ForceRepair always writes, so
// a read-only forced repair is an *OptionsError (matching dets.ErrReadOnly
// too, as dets.Open reports it).
//
// # In one process
//
// A nested session on the same file contends exactly like another process
// (ErrBusy or ErrTimedOut); it never deadlocks and is never re-entrant.
// Sessions on different files are independent. The callback runs in the
// calling goroutine; it must not keep the *dets.Table, close it, or hand it
// to work that outlives the callback.
//
// A panic or runtime.Goexit in the callback closes the table and releases
// the lock before it continues, with the original panic value.
//
// # Errors
//
// Every failure is one of: ErrInvalidWait, ErrNilCallback or an
// *OptionsError (ErrInvalidOptions), all before any file system access;
// *AcquisitionError (the table was
// not opened, the callback did not run), whose Reason is ErrBusy,
// ErrTimedOut, ErrUnsupportedFilesystem, ErrUnsafeAlias,
// ErrUnsupportedTarget, ErrQuarantined or ErrAlreadyOpen, or nil for an
// operating-system error; *SessionError with Stage OpenFailure (including
// ErrNeedsRepair), CallbackFailure or CloseFailure (a read-only table only);
// *CleanupError when closing a read-write table or releasing the lock
// failed. That includes the release of a lock the session never used:
// one obtained after the wait's deadline, or one the checks under the
// lock refused (the sidecar or the data file changed meanwhile). The
// table was not opened, the callback did not run, and the Primary is what
// the session would have given otherwise: the *AcquisitionError of
// ErrTimedOut, or of the refusal such as ErrUnsafeAlias (errors.Is
// matches it too, and CauseCode is its code).
//
// A cleanup failure quarantines the file in this process: when the table
// failed to close the lock is kept until the process exits, and later
// sessions on the file fail with ErrQuarantined. Stop using the file in this
// process; never delete the sidecar to recover. Cleanup failures are logged
// through log/slog (slog.Default, or the logger given to SetLogger) at
// Error level with event=godets_exclusive_cleanup_failed
// (EventCleanupFailed).
//
// Quarantine is for the two cases where another owner could be harmed: a
// read-write table whose Close failed (it may have unwritten state, so the
// lock is kept), and a lock whose release failed, even one released
// unused because it came after the deadline, was refused by the checks
// under it, or came after its session had given up waiting. A read-only
// table has
// nothing to flush: when its Close fails (for example with a read error the
// callback already saw) the lock is released and nothing is quarantined.
// That close error is returned beside the callback's: after a failed
// callback as the *SessionError's Close field (the stage stays
// CallbackFailure, since read errors belong to the callback), after a
// successful one as a *SessionError of stage CloseFailure.
//
// Error() strings name paths, for trusted logs. For output shown to end
// users use Code (a short stable identifier) and Message (one sentence);
// neither contains a path or text from the callback's error.
//
// # Codes
//
// Code names the outcome of a session; CauseCode names what caused it.
// They differ for a failed callback: its Code is callback_failed whatever
// the callback returned (the table was opened; the failure is the
// caller's work), and its CauseCode is the code of the callback's error,
// such as corrupt for a read that met damage, or busy for a nested session
// that did not start. An open failure's Code is already its cause's. A
// nested session's failure returned by a callback is never the outer
// session's own: errors.Is still matches ErrBusy through the chain, but
// errors.As finds an *AcquisitionError with Nested set.
//
// Codes of this package, before the table is opened:
//
//	invalid_wait            ErrInvalidWait
//	invalid_callback        ErrNilCallback
//	invalid_options         *OptionsError, ErrInvalidOptions
//	busy                    *AcquisitionError, ErrBusy
//	timed_out               *AcquisitionError, ErrTimedOut
//	unsupported_filesystem  *AcquisitionError, ErrUnsupportedFilesystem
//	unsafe_alias            *AcquisitionError, ErrUnsafeAlias
//	unsupported_target      *AcquisitionError, ErrUnsupportedTarget
//	quarantined             *AcquisitionError, ErrQuarantined
//	already_open            *AcquisitionError, ErrAlreadyOpen
//	os_error                *AcquisitionError with a nil Reason
//
// when the table cannot be opened (a read-only session's missing file
// included, found before any open), or the callback or the close of a
// read-only table fails:
//
//	open_failed             *SessionError, OpenFailure, with a cause that has no code
//	callback_failed         *SessionError, CallbackFailure
//	close_failed            *SessionError, CloseFailure (read-only table)
//
// and when a read-write table fails to close or a lock fails to be
// released, whether the table was opened or not (a lock obtained after
// the wait's deadline, or refused by the checks under it, is released
// before any open):
//
//	cleanup_failed          *CleanupError, ErrCleanupFailed
//
// Codes of dets errors, the Code of an open failure they cause, and the
// CauseCode of a callback failure:
//
//	needs_repair            dets.ErrNeedsRepair (= ErrNeedsRepair)
//	not_closed              dets.ErrNotClosed
//	not_dets                dets.ErrNotDETS
//	unsupported_version     dets.ErrUnsupportedVersion
//	bad_type_code           dets.ErrBadTypeCode
//	bad_hash_method         dets.ErrBadHashMethod
//	unsupported_hash        dets.ErrUnsupportedHash
//	kind_mismatch           dets.ErrKindMismatch
//	keypos_mismatch         dets.ErrKeyPosMismatch
//	format_mismatch         dets.ErrFormatMismatch
//	invalid_table_options   dets.ErrInvalidOptions
//	not_supported           dets.ErrNotSupported
//	double_open             dets.ErrAlreadyOpen
//	corrupt                 dets.ErrCorrupt, *dets.CorruptionError
//	map_fault               dets.ErrMapFault, *dets.MapFaultError
//	file_too_large          dets.ErrFileTooLarge
//	format_limit            dets.ErrFormatLimit, *dets.FormatLimitError (converting to otp9)
//	read_only               dets.ErrReadOnly
//	table_closed            dets.ErrClosed
//	bad_object              dets.ErrBadObject
//	no_such_key             dets.ErrNoSuchKey
//	no_such_slot            dets.ErrNoSuchSlot (inspecting a file)
//	image_too_short         dets.ErrImageTooShort (inspecting a file)
//	cannot_redact           dets.ErrCannotRedact (redacting a file)
//	bad_argument            dets.ErrBadArgument
//
// Errors of other packages built on this one (kinds) carry their own code
// and sentence by implementing CodedError. Code is "ok" for nil and
// "error" for an error with no code anywhere in its chain. When an error
// wraps several with codes, the outermost wins: dets.ErrNeedsRepair over
// the corruption that made the file need repair.
//
// # What sessions do not give
//
// All programs sharing a file must use sessions, readers included: raw
// dets.Open ignores the lock. A callback error does not roll back earlier
// writes; sessions add no transaction or power-loss guarantee. Releasing
// the lock between a read and a dependent write permits lost updates: keep
// read-modify-write inside one callback (see the examples). Keep the
// namespace stable: renaming, replacing or removing data files or sidecars,
// or adding links, while sessions can start is outside the contract, except
// for the owner of the lock replacing the data file (a repair renames the
// rebuilt file over the path): sessions waiting meanwhile go on with the
// new file, which is checked under the lock like any other.
//
// A read-only session on a missing file fails as its open would (a
// *SessionError of stage OpenFailure matching fs.ErrNotExist) and leaves
// nothing on disk: no sidecar is created for a file that does not exist.
package exclusive
