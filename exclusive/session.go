package exclusive

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/godets/godets/internal/lockfile"
)

// Log events. Cleanup failures that quarantine the file are logged at
// Error level with the attribute event=EventCleanupFailed, plus path (the
// resolved data path), cause ("return", "panic_or_goexit", or
// "abandoned_wait" for the lock a timed-out session's wait obtained after
// it returned), failures and primary (when there is one). A read-only table that failed to close during a panic or
// runtime.Goexit, when no error can be returned, is logged at Warn level
// with event=EventCloseFailed. Logs may name paths; they are meant for
// trusted operators. SetLogger chooses where they go.
const (
	EventCleanupFailed = "godets_exclusive_cleanup_failed"
	EventCloseFailed   = "godets_exclusive_read_only_close_failed"
)

// logger is where log records go; nil means slog.Default.
var logger atomic.Pointer[slog.Logger]

// SetLogger sends this package's log records to l; nil restores the
// default, slog.Default() at the time of each record. To silence them (a
// command whose stderr is its own one-line message), pass
// slog.New(slog.DiscardHandler). The errors are returned to the caller
// either way; the log is for operators of long-running processes, who must
// learn of a quarantine even when the caller drops the error.
func SetLogger(l *slog.Logger) { logger.Store(l) }

func currentLogger() *slog.Logger {
	if l := logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// registry is the process-wide view of sessions. The kernel lock already
// excludes a second session in this process (flock is per open file
// description), so the registry only adds what the kernel cannot: quarantine
// of files whose cleanup failed, and a happens-before edge between
// consecutive sessions on one file for the race detector, which knows
// nothing about file locks (its mutex is taken after every acquisition and
// before every release).
var registry = struct {
	sync.Mutex
	quarantined map[string]*lockfile.Lock // by resolved data path; the lock may be nil
	quarantID   map[lockfile.ID]bool
}{
	quarantined: map[string]*lockfile.Lock{},
	quarantID:   map[lockfile.ID]bool{},
}

// errRefused is what refuseQuarantined gives lockfile to end an
// acquisition; run turns it into ErrQuarantined.
var errRefused = errors.New("exclusive: quarantined")

// refuseQuarantined is lockfile.Options.Refuse: it runs after each
// resolution, before any lock attempt, so a quarantined file whose lock is
// still held reports ErrQuarantined rather than ErrBusy.
func refuseQuarantined(data string) error {
	registry.Lock()
	_, ok := registry.quarantined[data]
	registry.Unlock()
	if ok {
		return errRefused
	}
	return nil
}

// quarantine refuses data for the rest of the process. If held is non-nil,
// its lock is kept (referenced here so it is never collected) until exit.
func quarantine(data string, id lockfile.ID, held *lockfile.Lock) {
	registry.Lock()
	defer registry.Unlock()
	quarantineLocked(data, id, held)
}

// quarantineLocked is quarantine with the registry held.
func quarantineLocked(data string, id lockfile.ID, held *lockfile.Lock) {
	registry.quarantined[data] = held
	if held != nil {
		// Only a held descriptor pins the inode; a released one's
		// number may be reused by an unrelated file.
		registry.quarantID[id] = true
	}
}

// closer is what a session opens: *dets.Table in production, fakes in tests.
type closer interface{ Close() error }

// testHooks injects faults; zero in production.
type testHooks struct {
	lock   *lockfile.Hooks
	unlock func(*lockfile.Lock) error // replaces (*lockfile.Lock).Unlock
	// afterAcquire runs once the lock is held, before the open step.
	afterAcquire func()
}

// session is one owned table: the lock, and the table once open.
type session[R closer] struct {
	lock     *lockfile.Lock
	table    R
	hooks    *testHooks
	readOnly bool // a failed close cannot have left unwritten state
	done     bool
}

// runMode says how run treats the data file.
type runMode struct {
	// openData: the lock opens an existing data file read-write while it
	// re-checks it; open should take it with TakeDataFD (Unlock closes it
	// otherwise).
	openData bool
	// readOnly: the table is opened read-only, so a failed close leaves
	// nothing unwritten and does not quarantine the file.
	readOnly bool
	// existingOnly: open cannot create the file, so a missing data file
	// fails as an open failure matching fs.ErrNotExist, and the lock
	// creates no sidecar for it.
	existingOnly bool
}

// noHooks is the production testHooks, shared so that run allocates none.
var noHooks testHooks

// run is the whole session protocol, generic over the table type:
// validate wait → resolve → acquire → open(lock) → fn → close → release.
func run[T any, R closer](path string, wait Wait, hooks *testHooks, mode runMode, open func(*lockfile.Lock) (R, error), fn func(R) (T, error)) (T, error) {
	var zero T
	if wait.d < 0 {
		return zero, ErrInvalidWait
	}
	if fn == nil {
		return zero, ErrNilCallback
	}
	if hooks == nil {
		hooks = &noHooks
	}
	// Resolution and the quarantine check by path (Refuse) happen inside
	// Acquire, before any lock attempt, and again if the path turns out to
	// resolve elsewhere under the lock. The wait covers resolution too.
	lock, err := lockfile.Acquire(path, lockfile.Options{Wait: wait.d, Hooks: hooks.lock, Refuse: refuseQuarantined,
		ReleaseUnused: releaseUnused, ReleaseAbandoned: releaseAbandoned, OpenData: mode.openData, ExistingOnly: mode.existingOnly})
	if err != nil {
		return zero, acquireFailed(err)
	}
	s := session[R]{lock: lock, hooks: hooks, readOnly: mode.readOnly}
	registry.Lock()
	_, byPath := registry.quarantined[lock.DataPath()]
	refused := byPath || registry.quarantID[lock.ID()]
	registry.Unlock()
	if refused {
		// Same file reached through another name (e.g. a bind-mounted
		// directory) whose earlier cleanup failed, or a session of this
		// process whose release failed as this one took the lock.
		if errs := s.release(); len(errs) > 0 {
			return zero, s.cleanupFailed(&AcquisitionError{Reason: ErrQuarantined}, errs, "return")
		}
		return zero, &AcquisitionError{Reason: ErrQuarantined}
	}
	if openElsewhere(lock) {
		if errs := s.release(); len(errs) > 0 {
			return zero, s.cleanupFailed(&AcquisitionError{Reason: ErrAlreadyOpen}, errs, "return")
		}
		return zero, &AcquisitionError{Reason: ErrAlreadyOpen}
	}
	if hooks.afterAcquire != nil {
		hooks.afterAcquire()
	}

	table, err := open(lock)
	if err != nil {
		primary := &SessionError{Stage: OpenFailure, Err: err}
		if errs := s.release(); len(errs) > 0 {
			return zero, s.cleanupFailed(primary, errs, "return")
		}
		return zero, primary
	}
	s.table = table

	// Cleanup runs in a deferred call so that a panic or runtime.Goexit in
	// fn also closes the table and releases the lock. It does not recover:
	// a panic continues with its original value and stack once cleanup is
	// done.
	defer func() {
		if !s.done {
			errs, closeErr := s.finish()
			switch {
			case len(errs) > 0:
				if closeErr != nil {
					errs = append(errs, fmt.Errorf("exclusive: closing read-only table: %w", closeErr))
				}
				s.logFailure(nil, errs, "panic_or_goexit")
			case closeErr != nil:
				s.logCloseFailure(closeErr, "panic_or_goexit")
			}
		}
	}()
	v, ferr := fn(table)
	errs, closeErr := s.finish()
	var primary error
	switch {
	case ferr != nil:
		if closeErr != nil && errors.Is(ferr, closeErr) {
			closeErr = nil // the read error the callback met and returned
		}
		primary = &SessionError{Stage: CallbackFailure, Err: ferr, Close: closeErr}
	case closeErr != nil:
		primary = &SessionError{Stage: CloseFailure, Err: closeErr}
	}
	if len(errs) > 0 {
		return v, s.cleanupFailed(primary, errs, "return")
	}
	return v, primary
}

// finish closes the table, then releases the lock. It returns the failures
// that quarantined the file and, apart, the failed close of a read-only
// table, which quarantines nothing.
//
// A read-write table that fails to close may have unwritten state: the lock
// is kept and the file quarantined, so that no other owner starts on it
// while this process lives. A read-only table has nothing to flush, and
// dets closes its descriptor whatever Close returns (a stored read error,
// say), so its lock is released as after a good close.
func (s *session[R]) finish() (errs []error, readOnlyClose error) {
	s.done = true
	if err := s.table.Close(); err != nil {
		if !s.readOnly {
			quarantine(s.lock.DataPath(), s.lock.ID(), s.lock)
			return []error{fmt.Errorf("exclusive: closing table: %w", err)}, nil
		}
		readOnlyClose = err
	}
	return s.release(), readOnlyClose
}

// release gives up the lock; a failure quarantines the file (a failed
// LOCK_UN still closes the descriptor, which drops the lock; see
// lockfile.Lock.Unlock).
func (s *session[R]) release() []error {
	s.done = true
	// The registry is held across the unlock: it is the happens-before
	// edge to the next session's post-acquisition check (see registry),
	// and a session of this process that takes the lock the moment it
	// drops meets, in that check, the quarantine of a failed unlock.
	registry.Lock()
	defer registry.Unlock()
	if err := s.unlock(); err != nil {
		quarantineLocked(s.lock.DataPath(), s.lock.ID(), nil)
		return []error{fmt.Errorf("exclusive: releasing lock: %w", err)}
	}
	return nil
}

// acquireFailed gives the session's error for a failed lockfile.Acquire.
func acquireFailed(err error) error {
	var late *lockfile.LateReleaseError
	var refused *lockfile.RecheckReleaseError
	switch {
	case errors.As(err, &late):
		// The lock came after the deadline and could not be given back:
		// a failed release like any other (releaseUnused quarantined the
		// file), after a timed-out acquisition.
		return releaseFailed(late.Path, acquisitionError(lockfile.ErrTimedOut), late.Err)
	case errors.As(err, &refused):
		// The same after a refusal under the lock: the primary is what
		// the refusal alone would have given.
		return releaseFailed(refused.Path, acquireFailed(refused.Cause), refused.Err)
	case errors.Is(err, errRefused):
		return &AcquisitionError{Reason: ErrQuarantined}
	case errors.Is(err, lockfile.ErrNoDataFile):
		// What the open would have said, without a lock left behind.
		return &SessionError{Stage: OpenFailure, Err: err}
	}
	return acquisitionError(err)
}

// releaseFailed reports the failed release, by lockfile, of a lock that
// the session never used: the table was not opened and the callback did
// not run. releaseUnused has quarantined data already.
func releaseFailed(data string, primary, err error) error {
	errs := []error{fmt.Errorf("exclusive: releasing lock: %w", err)}
	logCleanupFailure(data, primary, errs, "return")
	return &CleanupError{Primary: primary, Failures: errs}
}

// releaseUnused is lockfile.Options.ReleaseUnused, for a lock obtained
// after the wait's deadline or refused by the checks under it: it
// releases the lock as release does, with the registry held and a
// failure quarantined before the registry is let go, so that a session of
// this process waiting for the lock cannot run in between.
func releaseUnused(l *lockfile.Lock) error {
	registry.Lock()
	defer registry.Unlock()
	err := l.Unlock()
	if err != nil {
		quarantineLocked(l.DataPath(), l.ID(), nil)
	}
	return err
}

// releaseAbandoned is lockfile.Options.ReleaseAbandoned, for a lock that
// a session's wait in the kernel obtained after the session gave up with
// ErrTimedOut. It releases it as releaseUnused does, quarantining the
// file on failure; no session is left to return that failure to, so it
// is only logged.
func releaseAbandoned(l *lockfile.Lock) {
	if err := releaseUnused(l); err != nil {
		errs := []error{fmt.Errorf("exclusive: releasing lock: %w", err)}
		logCleanupFailure(l.DataPath(), nil, errs, "abandoned_wait")
	}
}

func (s *session[R]) unlock() error {
	if s.hooks.unlock != nil {
		return s.hooks.unlock(s.lock)
	}
	return s.lock.Unlock()
}

func (s *session[R]) cleanupFailed(primary error, errs []error, cause string) error {
	s.logFailure(primary, errs, cause)
	return &CleanupError{Primary: primary, Failures: errs}
}

func (s *session[R]) logFailure(primary error, errs []error, cause string) {
	logCleanupFailure(s.lock.DataPath(), primary, errs, cause)
}

// logCleanupFailure logs a cleanup failure that quarantined data.
func logCleanupFailure(data string, primary error, errs []error, cause string) {
	attrs := []any{
		"event", EventCleanupFailed,
		"path", data,
		"cause", cause,
		"failures", lockfile.JoinLine(errs...).Error(),
	}
	if primary != nil {
		attrs = append(attrs, "primary", primary.Error())
	}
	currentLogger().Error("exclusive: session cleanup failed; file quarantined in this process", attrs...)
}

func (s *session[R]) logCloseFailure(err error, cause string) {
	currentLogger().Warn("exclusive: closing a read-only table failed; lock released, file not quarantined",
		"event", EventCloseFailed, "path", s.lock.DataPath(), "cause", cause, "failure", err.Error())
}
