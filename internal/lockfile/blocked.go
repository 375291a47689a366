//go:build !windows

package lockfile

import (
	"errors"
	"io/fs"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Waiting in the kernel.
//
// A waiter that polls sees the lock free only if it happens to try in a gap
// between two owners. Under sustained contention those gaps last
// microseconds, and the process that has just released usually takes the
// lock again before any poller wakes up, so pollers time out while others
// get in over and over. A waiter blocked in flock(LOCK_EX) without LOCK_NB
// is woken by the kernel the moment the lock is released (Linux wakes every
// request blocked on it, oldest first, and the first to run takes it), so
// it competes for every release instead of one every 20 ms. This is not a
// strict queue, and a newcomer's first non-blocking attempt can still win a
// release, but no waiter sits out releases while it sleeps.
//
// flock has no timeout, and a blocked call cannot be cancelled: Go installs
// its signal handlers with SA_RESTART, and closing the descriptor does not
// wake it. So the call runs in its own goroutine (which holds an OS thread
// while it is blocked), and the session waits for it until its deadline.
// A session that gives up abandons the waiter; when the abandoned flock
// eventually returns with the lock, the lock is released at once, without
// anything being opened, and the descriptor is parked as after a session.
// That release goes through the ReleaseAbandoned of the session that gave
// up last, which must also deal with its failure: nobody else is left to
// learn that this process may still hold the lock.
//
// At most one waiter per data path exists in the process, and at most
// maxBlocked in all, so a holder that never releases pins a bounded number
// of threads however many sessions time out on it: a new session on a file
// whose waiter was abandoned takes that waiter over, and a session that
// finds the waiter taken (another session of this process waits for the
// same file) polls, as do sessions beyond the bound.
//
// A blocked waiter owns its descriptor, like a Lock or the parked set; it
// is handed to exactly one of them when the flock returns.
//
// Waking is not enough on its own: a woken waiter still has to be
// scheduled, and the process that has just released is already running,
// so its next session's first attempt, which does not block, often comes
// first. Measured with 8 processes taking turns, that happened in about a
// third of the turns, in runs of up to 17. So a waiting session that finds
// this process waited for the file recently (contendedFor) first yields
// the turn (yieldTurn): it pauses briefly (yieldPause) before its first
// attempt, long enough for a woken waiter to take the lock, after which
// the session blocks behind it. That brought the previous owner's share to
// about one turn in a hundred. A single attempt (Wait zero) never pauses,
// and a process that has not waited for the file recently never does. The
// mark travels with the parked descriptor, so it costs the uncontended
// path nothing, and is lost where no descriptor could be parked (the
// parked set full): those sessions just do not yield.

// contendedFor is how long after a wait for a file this process keeps
// yielding the first attempt of its waiting sessions on it.
const contendedFor = 100 * time.Millisecond

// yieldPause is that pause; time.Sleep rounds it up (to about a
// millisecond on some systems), which is still short beside a turn.
const yieldPause = 500 * time.Microsecond

// monoEpoch and monoNow give monotonic instants as int64 (nanoseconds
// since the package started; never zero), smaller to carry than a
// time.Time.
var monoEpoch = time.Now()

func monoNow() int64 { return int64(time.Since(monoEpoch)) + 1 }

// yieldTurn pauses before a waiting attempt if this process last had to
// wait for the file, at waitedAt (monoNow), less than contendedFor ago,
// never past deadline.
func yieldTurn(waitedAt int64, deadline time.Time, h *Hooks) {
	if time.Duration(monoNow()-waitedAt) >= contendedFor {
		return
	}
	d := min(yieldPause, time.Until(deadline))
	if d <= 0 {
		return
	}
	if h != nil && h.Sleep != nil {
		h.Sleep(d)
		return
	}
	time.Sleep(d)
}

// maxBlocked bounds the goroutines blocked in flock at one time.
const maxBlocked = 32

// blockedWaiter is one flock(LOCK_EX) call in progress.
type blockedWaiter struct {
	fd       int
	id       ID
	magic    uint32
	parkable bool
	target   *Target // for parking and messages once abandoned
	hooks    *Hooks
	done     chan struct{} // closed once flock returned
	released chan struct{} // closed once an abandoned waiter gave the lock back
	// Under blocked's mutex:
	finished bool  // flock returned
	err      error // its error, once finished
	claimed  bool  // a session waits for the result; false once abandoned
	// abandon is Options.ReleaseAbandoned of the session that gave up on
	// the waiter last, nil while none has.
	abandon func(*Lock)
}

var blocked struct {
	sync.Mutex
	m map[string]*blockedWaiter // by resolved data path
}

// waitBlocked waits in the kernel, until deadline, for the lock on the
// descriptor of l, which failed to lock it without blocking. It takes
// ownership of l's descriptor in every case. It returns a Lock holding the
// lock (not yet verified: see verifyLocked), ErrTimedOut, a flock error, or
// errWouldBlock when the caller should poll instead (its descriptor parked
// or closed by then). abandon is the caller's Options.ReleaseAbandoned.
func (t *Target) waitBlocked(l *Lock, deadline time.Time, abandon func(*Lock)) (*Lock, error) {
	blocked.Lock()
	w := blocked.m[t.Data]
	switch {
	case w == nil && len(blocked.m) < maxBlocked:
		w = &blockedWaiter{fd: l.fd, id: l.id, magic: l.magic, parkable: l.parkable,
			target: t, hooks: l.hooks, done: make(chan struct{}), released: make(chan struct{}), claimed: true}
		if blocked.m == nil {
			blocked.m = make(map[string]*blockedWaiter)
		}
		blocked.m[t.Data] = w
		blocked.Unlock()
		l.fd = noFD
		l.release = true
		go w.block(t.Data)
	case w != nil && w.finished:
		// Abandoned, granted, and giving the lock back: it is held by
		// nobody who wants it, so try again as soon as it is free.
		blocked.Unlock()
		l.parkOrClose()
		<-w.released
		return nil, errRetryNow
	case w != nil && !w.claimed:
		// Abandoned by a session that timed out, and still blocked:
		// wait for its result instead of starting another thread.
		w.claimed = true
		blocked.Unlock()
		l.parkOrClose()
	default:
		blocked.Unlock()
		l.parkOrClose()
		return nil, errWouldBlock
	}

	return t.awaitWaiter(w, l.hooks, deadline, abandon)
}

// singleAttemptFailed decides what a single attempt (Wait zero) that met
// the lock held comes to: ErrBusy; a lock taken over from this process's
// abandoned waiter (takeAbandoned); or, once (retried false), errRetryNow
// when such a waiter gave the lock back meanwhile, released counting the
// give-backs before the attempt. It takes l's descriptor in every case.
// With a Sleep hook (tests with a fake clock) nothing is taken over.
// abandon is the caller's Options.ReleaseAbandoned.
func (t *Target) singleAttemptFailed(l *Lock, h *Hooks, abandon func(*Lock), retried bool, released uint64) (*Lock, error) {
	if h == nil || h.Sleep == nil {
		if bl, err, ok := t.takeAbandoned(l, PollInterval, abandon); ok {
			if err == errRetryNow && retried {
				return nil, ErrBusy
			}
			return bl, err
		}
		if !retried && abandonedReleases.Load() != released {
			l.parkOrClose()
			return nil, errRetryNow
		}
	}
	l.parkOrClose()
	return nil, ErrBusy
}

// takeAbandoned serves a single attempt (Wait zero) that found the lock
// held while this process has a waiter that a timed-out session abandoned
// on the same file. When the holder releases, that waiter is granted the
// lock and gives it straight back; an attempt made in that moment would
// fail against nobody (the release of one session, then ErrBusy for the
// next in the same process). So the attempt takes the waiter over for at
// most grace: granted meanwhile, the lock is the attempt's; still blocked,
// the file is held by a real owner and the answer is ErrBusy. A waiter
// already giving the lock back is waited for, and the attempt made again
// (errRetryNow). ok is false, with l untouched, when there is no such
// waiter; otherwise l's descriptor was taken in every case.
func (t *Target) takeAbandoned(l *Lock, grace time.Duration, abandon func(*Lock)) (_ *Lock, _ error, ok bool) {
	blocked.Lock()
	w := blocked.m[t.Data]
	switch {
	case w == nil || (w.claimed && !w.finished):
		blocked.Unlock()
		return nil, nil, false
	case w.finished:
		blocked.Unlock()
		l.parkOrClose()
		<-w.released
		return nil, errRetryNow, true
	}
	w.claimed = true
	blocked.Unlock()
	l.parkOrClose()
	nl, err := t.awaitWaiter(w, l.hooks, time.Now().Add(grace), abandon)
	if err == ErrTimedOut || err == errWouldBlock {
		err = ErrBusy
	}
	return nl, err, true
}

// awaitWaiter waits until deadline for the result of w, which the caller
// claimed, and turns it into a Lock with hooks h. A caller that gives up
// leaves abandon (its Options.ReleaseAbandoned) to release the lock should
// the waiter get it later.
func (t *Target) awaitWaiter(w *blockedWaiter, h *Hooks, deadline time.Time, abandon func(*Lock)) (*Lock, error) {
	timer := time.NewTimer(time.Until(deadline))
	select {
	case <-w.done:
		timer.Stop()
	case <-timer.C:
		blocked.Lock()
		if !w.finished {
			w.claimed = false
			w.abandon = abandon
			blocked.Unlock()
			return nil, ErrTimedOut
		}
		blocked.Unlock()
		<-w.done
	}
	// The result is ours: w.block saw claimed set. The Lock is this
	// session's, with its hooks (a waiter taken over had another's).
	nl := &Lock{fd: w.fd, id: w.id, magic: w.magic, parkable: w.parkable && (h == nil || h.Close == nil),
		target: t, hooks: h, dataFD: noFD}
	switch err := w.err; {
	case err == nil:
		return nl, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		// Only a Flock hook returns this for a blocking call; treat it
		// as still held.
		nl.parkOrClose()
		return nil, errWouldBlock
	default:
		nl.closeOnly()
		return nil, &fs.PathError{Op: "flock", Path: t.Sidecar, Err: err}
	}
}

// block runs flock(LOCK_EX) and hands the result to the session waiting
// for it, or, if it was abandoned, releases the lock (through w.abandon
// when set) and parks the descriptor.
func (w *blockedWaiter) block(data string) {
	l := &Lock{fd: w.fd, id: w.id, magic: w.magic, parkable: w.parkable,
		target: w.target, hooks: w.hooks, dataFD: noFD}
	err := l.flock(lockExclusive)
	blocked.Lock()
	w.finished, w.err = true, err
	claimed, abandon := w.claimed, w.abandon
	if claimed || err != nil {
		w.forget(data)
	}
	blocked.Unlock()
	close(w.done)
	if claimed {
		return
	}
	if err != nil {
		l.closeOnly()
		return
	}
	// A late acquisition nobody waits for: give it back at once. The
	// waiter stays known until then, so that an attempt of this process
	// that meets the lock held by it waits for the release (takeAbandoned)
	// instead of failing. A failed release may leave the lock held with
	// no owner, so abandon must make it known (exclusive quarantines).
	if abandon != nil {
		abandon(l)
	} else {
		_ = l.Unlock()
	}
	// Counted before it is forgotten: an attempt that met the lock held
	// here and finds no waiter any more must see the count changed, or
	// it answers ErrBusy against nobody (singleAttemptFailed).
	abandonedReleases.Add(1)
	blocked.Lock()
	w.forget(data)
	blocked.Unlock()
	if f := afterAbandonedForget.Load(); f != nil {
		(*f)()
	}
	close(w.released)
}

// afterAbandonedForget, nil but in tests, runs when an abandoned waiter
// that gave its lock back is no longer known by its path.
var afterAbandonedForget atomic.Pointer[func()]

// abandonedReleases counts the locks abandoned waiters gave back. A single
// attempt that failed reads it before and after: a change means the lock
// it met may have been one of those, gone before takeAbandoned could see
// its waiter, and the attempt is made once more.
var abandonedReleases atomic.Uint64

// forget drops w from the waiters by path; blocked's mutex is held.
func (w *blockedWaiter) forget(data string) {
	if blocked.m[data] == w {
		delete(blocked.m, data)
	}
}
