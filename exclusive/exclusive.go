package exclusive

import (
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
)

// Wait bounds how long a session waits for a lock held elsewhere. The zero
// Wait is Immediate.
type Wait struct{ d time.Duration }

// Immediate tries once: a held lock gives ErrBusy.
var Immediate = Wait{}

// WaitUpTo waits for a held lock until d has passed on the monotonic
// clock, then gives ErrTimedOut. The first waiter for a file in a process
// blocks in the kernel, which wakes it when the lock is released; others
// poll at most every 20 ms. WaitUpTo(0) is
// Immediate. A negative d makes the session fail with ErrInvalidWait before
// touching the file system. There is no infinite wait.
//
// The wait bounds contention only: a stalled system call can delay the
// result, and once the lock is held the deadline no longer applies (open,
// repair and the callback run to completion). A lock obtained after the
// deadline, even by a moment, does not count as held: it is released
// unused and the session reports ErrTimedOut without opening the table.
// If that release fails the session reports a *CleanupError instead
// (its Primary the timeout) and the file is quarantined, as after any
// failed release.
func WaitUpTo(d time.Duration) Wait { return Wait{d: d} }

// Duration is the wait's bound (0 for Immediate).
func (w Wait) Duration() time.Duration { return w.d }

func (w Wait) String() string {
	if w.d == 0 {
		return "Immediate"
	}
	return "WaitUpTo(" + w.d.String() + ")"
}

// Options configure a session.
type Options struct {
	// Repair decides what opening a file that was not closed properly does:
	// dets.NoRepair (the zero value) fails with ErrNeedsRepair, AutoRepair
	// repairs it while the lock is held, ForceRepair always rebuilds.
	Repair dets.RepairMode
	// ReadOnly opens the table without writing.
	ReadOnly bool
	// Wait bounds lock contention; the zero value is Immediate.
	Wait Wait
	// Table supplies kind, key position, format and the rest of dets.Options
	// for the open (Durability LikeOTP saves one fsync per write session).
	// Its Repair and ReadOnly merge with the fields above: a setting made
	// on one side only (a non-zero Repair, a true ReadOnly) applies, and
	// two different repair modes are an *OptionsError (see
	// ErrInvalidOptions).
	Table dets.Options

	hooks *testHooks
}

// openElsewhere reports whether the locked data file is open in this
// process outside a session. The lock re-checked the file's identity, so
// no stat is needed; a file that did not exist cannot be open. A variable
// so tests can stub it.
var openElsewhere = func(l *lockfile.Lock) bool {
	id, ok := l.DataID()
	return ok && dets.IsOpenID(id.Dev, id.Ino)
}

// With runs fn inside an exclusive session on the table at path.
//
// The session acquires the sidecar lock (see package doc), opens the table
// on the resolved path (a read-write session on an existing file uses the
// descriptor the lock opened while checking that path; see
// dets.OpenDescriptor),
// runs fn in the calling goroutine, closes the table and releases the lock.
// It returns nil only after the close and the release succeeded.
//
// Errors: ErrInvalidWait; *AcquisitionError (ErrBusy, ErrTimedOut, ...)
// before the table is opened; *SessionError (OpenFailure, CallbackFailure,
// CloseFailure) after the table was closed and the lock released;
// *CleanupError when closing a read-write table or releasing the lock
// failed, which quarantines the file in this process (also when the
// lock came after the wait's deadline, or was refused by the checks
// under it, and the table was never opened: its Primary is then the
// error the acquisition gave, such as the *AcquisitionError of
// ErrTimedOut).
//
// A panic or runtime.Goexit in fn closes the table and releases the lock,
// then continues with the original panic value.
//
// fn must not keep the table, close it, or use it after returning. A nested
// session on the same file contends like another process (ErrBusy or
// ErrTimedOut); it never deadlocks and is never re-entrant.
func With(path string, opts Options, fn func(*dets.Table) error) error {
	if fn == nil {
		return ErrNilCallback
	}
	_, err := Do(path, opts, func(t *dets.Table) (struct{}, error) { return struct{}{}, fn(t) })
	return err
}

// Do is With for a callback that returns a value. The value is returned
// with a nil error, a *SessionError of stage CallbackFailure or
// CloseFailure, or a *CleanupError.
func Do[T any](path string, opts Options, fn func(*dets.Table) (T, error)) (T, error) {
	to, err := opts.tableOptions()
	if err != nil {
		var zero T
		return zero, err
	}
	open := func(l *lockfile.Lock) (*dets.Table, error) {
		if fd, size, ok := l.TakeDataFD(); ok {
			id, _ := l.DataID()
			return dets.OpenDescriptor(fd, l.DataPath(), size, id.Dev, id.Ino, to)
		}
		return dets.Open(l.DataPath(), to)
	}
	// A read-write session on the real file system takes the descriptor
	// the lock's re-check opened instead of opening the path again. A
	// custom FS must see every open, and a read-only session would need
	// a read-only descriptor, so both open by path.
	// A read-only open cannot create the file: the lock then leaves no
	// sidecar for a missing one.
	mode := runMode{openData: !to.ReadOnly && to.FS == nil, readOnly: to.ReadOnly, existingOnly: to.ReadOnly && to.FS == nil}
	return run(path, opts.Wait, opts.hooks, mode, open, fn)
}

// tableOptions merges Repair and ReadOnly into Table's options, refusing
// settings that contradict each other before anything is touched.
//
// A side that leaves a field at its zero value defers to the other, so
// NoRepair and ReadOnly false cannot be insisted on against the other
// side. A read-only session with AutoRepair is allowed and follows dets: a
// closed file opens read-only, one that needs repair gives
// dets.ErrNotClosed untouched. ForceRepair always writes, so with ReadOnly
// it is refused here rather than after the lock is taken (dets.Open would
// give dets.ErrReadOnly).
func (o *Options) tableOptions() (dets.Options, error) {
	to := o.Table
	switch r, t := o.Repair, o.Table.Repair; {
	case r > dets.ForceRepair:
		return to, &OptionsError{Field: "Repair", Reason: "unknown repair mode " + r.String() + " in Options"}
	case t > dets.ForceRepair:
		return to, &OptionsError{Field: "Repair", Reason: "unknown repair mode " + t.String() + " in Options.Table"}
	case r != dets.NoRepair && t != dets.NoRepair && r != t:
		return to, &OptionsError{Field: "Repair", Reason: r.String() + " in Options, " + t.String() + " in Options.Table"}
	case r != dets.NoRepair:
		to.Repair = r
	}
	to.ReadOnly = o.ReadOnly || o.Table.ReadOnly
	if to.ReadOnly && to.Repair == dets.ForceRepair {
		return to, &OptionsError{Field: "Repair", Reason: "a forced repair writes, and the session is read-only", readOnly: true}
	}
	return to, nil
}
