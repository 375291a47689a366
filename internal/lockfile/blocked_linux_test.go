//go:build linux

package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockedCount is the number of kernel waiters in progress.
func blockedCount() int {
	blocked.Lock()
	defer blocked.Unlock()
	return len(blocked.m)
}

// waitNoBlocked waits until no kernel waiter is in progress (abandoned
// ones finish once their holder releases).
func waitNoBlocked(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); blockedCount() > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d kernel waiters still blocked", blockedCount())
		}
		time.Sleep(time.Millisecond)
	}
}

// blockedRequests counts the requests /proc/locks shows blocked on ino by
// this process.
func blockedRequests(t *testing.T, ino uint64) int {
	t.Helper()
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skip("no /proc/locks")
	}
	pid, suffix, n := strconv.Itoa(os.Getpid()), ":"+strconv.FormatUint(ino, 10), 0
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && f[5] == pid && strings.HasSuffix(f[6], suffix) {
			n++
		}
	}
	return n
}

// Issue #16 item 9: a waiter blocks in the kernel (/proc/locks lists its
// blocked request) and gets the lock at the release, not at its next poll.
func TestWaiterBlocksInKernel(t *testing.T) {
	data := newDataFile(t, t.TempDir(), "t.dets")
	holder := mustAcquire(t, data, Options{})
	ino, _ := statIno(t, data+SidecarSuffix)
	res := waitingAcquire(t, data, Options{Wait: 5 * time.Second})
	for deadline := time.Now().Add(2 * time.Second); blockedRequests(t, ino) != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("%d blocked requests on the sidecar, want 1", blockedRequests(t, ino))
		}
		time.Sleep(time.Millisecond)
	}
	released := time.Now()
	mustUnlock(t, holder)
	r := <-res
	el := time.Since(released)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.l.ID().Ino != ino {
		t.Fatalf("locked inode %d, sidecar is %d", r.l.ID().Ino, ino)
	}
	if _, err := Acquire(data, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("lock not held after a blocked wait: %v", err)
	}
	mustUnlock(t, r.l)
	t.Logf("acquired %v after the release", el)
	if blockedCount() != 0 {
		t.Fatal("kernel waiter left registered")
	}
}

// A session that times out abandons its kernel waiter; when the holder
// releases, the waiter's late lock is released at once and its descriptor
// parked (or closed), never left locked. Sessions timing out one after
// another on a held lock reuse the one abandoned waiter instead of
// blocking a thread each.
func TestAbandonedWaiterReleasesLate(t *testing.T) {
	data := newDataFile(t, t.TempDir(), "t.dets")
	holder := mustAcquire(t, data, Options{})
	ino, _ := statIno(t, data+SidecarSuffix)
	for i := range 5 {
		start := time.Now()
		_, err := Acquire(data, Options{Wait: 30 * time.Millisecond})
		if el := time.Since(start); !errors.Is(err, ErrTimedOut) || el < 30*time.Millisecond {
			t.Fatalf("session %d: %v after %v", i, err, el)
		}
		if n := blockedCount(); n != 1 {
			t.Fatalf("after %d timeouts: %d kernel waiters, want 1", i+1, n)
		}
	}
	if n := blockedRequests(t, ino); n != 1 {
		t.Fatalf("%d blocked requests in the kernel, want 1", n)
	}
	mustUnlock(t, holder)
	waitNoBlocked(t)
	// The late lock was given back.
	l, err := Acquire(data, Options{})
	if err != nil {
		t.Fatalf("after the abandoned waiter finished: %v", err)
	}
	mustUnlock(t, l)
	if n := len(sidecarFDs(t, data+SidecarSuffix)); n > 1 {
		t.Fatalf("%d sidecar descriptors open", n)
	}
}

// A session may take over a waiter abandoned by an earlier one, and gets
// the lock through it at the release.
func TestAbandonedWaiterTakenOver(t *testing.T) {
	data := newDataFile(t, t.TempDir(), "t.dets")
	holder := startHolder(t, data)
	if _, err := Acquire(data, Options{Wait: 20 * time.Millisecond}); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("want ErrTimedOut, got %v", err)
	}
	done := make(chan acquireResult, 1)
	go func() {
		l, err := Acquire(data, Options{Wait: 5 * time.Second})
		done <- acquireResult{l, err}
	}()
	time.Sleep(50 * time.Millisecond)
	if n := blockedCount(); n != 1 {
		t.Fatalf("%d kernel waiters, want the one taken over", n)
	}
	holder.Release(t)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if _, err := Acquire(data, Options{}); !errors.Is(err, ErrBusy) {
		t.Fatalf("lock not held: %v", err)
	}
	mustUnlock(t, r.l)
}

// While one session of the process waits in the kernel for a file, a
// second one polls: non-blocking attempts at most every 20 ms (behaviour 5),
// never a blocking flock of its own.
func TestSecondWaiterPolls(t *testing.T) {
	data := newDataFile(t, t.TempDir(), "t.dets")
	holder := startHolder(t, data)
	first := make(chan error, 1)
	go func() {
		_, err := Acquire(data, Options{Wait: 400 * time.Millisecond})
		first <- err
	}()
	for deadline := time.Now().Add(2 * time.Second); blockedCount() != 1; {
		if time.Now().After(deadline) {
			t.Fatal("first waiter not blocked")
		}
		time.Sleep(time.Millisecond)
	}
	var attempts, blocking atomic.Int32
	h := &Hooks{Flock: func(fd, how int) error {
		if how&unix.LOCK_EX != 0 {
			attempts.Add(1)
			if how&unix.LOCK_NB == 0 {
				blocking.Add(1)
			}
		}
		return unix.Flock(fd, how)
	}}
	const wait = 100 * time.Millisecond
	start := time.Now()
	_, err := Acquire(data, Options{Wait: wait, Hooks: h})
	el := time.Since(start)
	if !errors.Is(err, ErrTimedOut) || el < wait {
		t.Fatalf("second waiter: %v after %v", err, el)
	}
	if n := attempts.Load(); n < 2 || n > 7 || blocking.Load() != 0 {
		t.Fatalf("second waiter: %d attempts, %d blocking, in %v", n, blocking.Load(), el)
	}
	if err := <-first; !errors.Is(err, ErrTimedOut) {
		t.Fatalf("first waiter: %v", err)
	}
	holder.Release(t)
	waitNoBlocked(t)
}

// Kernel waiters are bounded: with more held files than maxBlocked, the
// extra sessions poll, and every one still times out on time.
func TestKernelWaitersBounded(t *testing.T) {
	dir := t.TempDir()
	n := maxBlocked + 4
	// Cleanups run last-in first-out: this one after the unlocks below.
	t.Cleanup(func() { waitNoBlocked(t) })
	var paths []string
	for i := range n {
		p := newDataFile(t, dir, "t"+strconv.Itoa(i)+".dets")
		paths = append(paths, p)
		l := mustAcquire(t, p, Options{})
		t.Cleanup(func() { _ = l.Unlock() })
	}
	var wg sync.WaitGroup
	var most atomic.Int32
	for _, p := range paths {
		wg.Go(func() {
			_, err := Acquire(p, Options{Wait: 150 * time.Millisecond})
			if !errors.Is(err, ErrTimedOut) {
				t.Errorf("%s: %v", filepath.Base(p), err)
			}
			if c := int32(blockedCount()); c > most.Load() {
				most.Store(c)
			}
		})
	}
	wg.Wait()
	if c := blockedCount(); c > maxBlocked || most.Load() > maxBlocked {
		t.Fatalf("%d kernel waiters (most seen %d), bound %d", c, most.Load(), maxBlocked)
	}
}

// Behaviour 13 with kernel waits, polls and abandoned waiters in play:
// goroutines taking turns on one file with WaitUpTo never hold it at the
// same time, and all get their turns.
func TestWaitingSessionsNeverOverlap(t *testing.T) {
	data := newDataFile(t, t.TempDir(), "t.dets")
	var holders, maxHolders, wins atomic.Int32
	var wg sync.WaitGroup
	per := 100
	if testing.Short() {
		per = 30
	}
	for range 4 {
		wg.Go(func() {
			for range per {
				l, err := Acquire(data, Options{Wait: 2 * time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				if n := holders.Add(1); n > maxHolders.Load() {
					maxHolders.Store(n)
				}
				wins.Add(1)
				time.Sleep(100 * time.Microsecond)
				holders.Add(-1)
				if err := l.Unlock(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if maxHolders.Load() != 1 || wins.Load() != int32(4*per) {
		t.Fatalf("max concurrent holders %d, wins %d of %d", maxHolders.Load(), wins.Load(), 4*per)
	}
	waitNoBlocked(t)
	if n := len(sidecarFDs(t, data+SidecarSuffix)); n > 1 {
		t.Fatalf("%d sidecar descriptors left open", n)
	}
}

// A session that takes over an abandoned waiter gets a Lock with its own
// hooks, not those of the session that gave up.
func TestTakenOverWaiterUsesOwnHooks(t *testing.T) {
	data := newDataFile(t, t.TempDir(), "t.dets")
	holder := mustAcquire(t, data, Options{})
	var closedA, closedB atomic.Int32
	hooksFor := func(n *atomic.Int32) *Hooks {
		return &Hooks{Close: func(fd int) error { n.Add(1); return unix.Close(fd) }}
	}
	if _, err := Acquire(data, Options{Wait: 20 * time.Millisecond, Hooks: hooksFor(&closedA)}); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("want ErrTimedOut, got %v", err)
	}
	done := make(chan acquireResult, 1)
	go func() {
		l, err := Acquire(data, Options{Wait: 5 * time.Second, Hooks: hooksFor(&closedB)})
		done <- acquireResult{l, err}
	}()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		blocked.Lock()
		w := blocked.m[data]
		taken := w != nil && w.claimed
		blocked.Unlock()
		if taken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned waiter was not taken over")
		}
	}
	// B closed its own descriptor when it took the waiter over.
	a, b := closedA.Load(), closedB.Load()
	mustUnlock(t, holder)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	mustUnlock(t, r.l)
	if closedB.Load()-b != 1 || closedA.Load() != a {
		t.Fatalf("Unlock closed through hooks of B %d times, of A %d times; want B once", closedB.Load()-b, closedA.Load()-a)
	}
}

// After an acquisition that had to wait, the next waiting attempt of the
// process on the file pauses first (yields the turn to woken waiters);
// a single attempt never does, nor an attempt once contendedFor has passed
// or in a process that never waited for the file.
func TestYieldTurnAfterContention(t *testing.T) {
	closeParked() // the mark travels with the parked descriptor: leave room
	data := newDataFile(t, t.TempDir(), "t.dets")
	var pauses []time.Duration
	var mu sync.Mutex
	h := &Hooks{Sleep: func(d time.Duration) {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
		time.Sleep(d)
	}}
	take := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		p := pauses
		pauses = nil
		return p
	}
	// Uncontended: no pause.
	for range 3 {
		mustUnlock(t, mustAcquire(t, data, Options{Wait: time.Second, Hooks: h}))
	}
	if p := take(); len(p) != 0 {
		t.Fatalf("uncontended sessions paused %v", p)
	}
	// A contended acquisition (polling, since Sleep is hooked).
	holder := mustAcquire(t, data, Options{})
	time.AfterFunc(30*time.Millisecond, func() { _ = holder.Unlock() })
	mustUnlock(t, mustAcquire(t, data, Options{Wait: time.Second, Hooks: h}))
	if p := take(); len(p) == 0 {
		t.Fatal("the contended acquisition never polled")
	}
	mustUnlock(t, mustAcquire(t, data, Options{Hooks: h}))
	if p := take(); len(p) != 0 {
		t.Fatalf("a single attempt paused %v", p)
	}
	mustUnlock(t, mustAcquire(t, data, Options{Wait: time.Second, Hooks: h}))
	if p := take(); len(p) != 1 || p[0] != yieldPause {
		t.Fatalf("waiting attempt after contention paused %v, want [%v]", p, yieldPause)
	}
	time.Sleep(contendedFor)
	mustUnlock(t, mustAcquire(t, data, Options{Wait: time.Second, Hooks: h}))
	if p := take(); len(p) != 0 {
		t.Fatalf("paused %v after contendedFor", p)
	}
}

// A single attempt right after the holder's release must not fail against
// this process's own abandoned waiter, which the kernel grants the lock at
// that release and which gives it straight back (takeAbandoned).
func TestSingleAttemptAfterAbandonedWaiter(t *testing.T) {
	if os.Getenv("GODETS_QEMU") != "" {
		// Natively takeAbandoned closes the race (this test failed in
		// round 17 of 100 without it); under qemu-user 7.2 a single
		// attempt still meets the lock held, in one run of three or so,
		// for a reason not found yet (a grace of 1 s does not help).
		t.Skip("under qemu-user: a single attempt still loses to the abandoned waiter at times")
	}
	data := newDataFile(t, t.TempDir(), "t.dets")
	for i := range 100 {
		holder := mustAcquire(t, data, Options{})
		if _, err := Acquire(data, Options{Wait: 2 * time.Millisecond}); !errors.Is(err, ErrTimedOut) {
			t.Fatalf("round %d: the waiter got %v, want ErrTimedOut", i, err)
		}
		mustUnlock(t, holder)
		l, err := Acquire(data, Options{})
		if err != nil {
			t.Fatalf("round %d: a single attempt after the release: %v", i, err)
		}
		mustUnlock(t, l)
	}
	waitNoBlocked(t)
}

// The lock an abandoned waiter obtains is given back through the
// ReleaseAbandoned of the acquisition that gave up on the waiter last,
// which also learns of a failed release: no acquisition is left to
// return that failure to.
func TestReleaseAbandonedGetsTheLateLock(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := newDataFile(t, dir, "t.dets")
	holder := mustAcquire(t, data, Options{})
	failUnlock := &Hooks{Flock: func(fd, how int) error {
		if how == unix.LOCK_UN {
			return unix.EIO
		}
		return unix.Flock(fd, how)
	}}
	type call struct {
		who, path string
		err       error
	}
	calls := make(chan call, 2)
	releaser := func(who string) func(*Lock) {
		return func(l *Lock) { calls <- call{who, l.DataPath(), l.Unlock()} }
	}
	// a starts the waiter (its hooks make the waiter's LOCK_UN fail) and
	// gives up; b takes the abandoned waiter over and gives up too.
	if _, err := Acquire(data, Options{Wait: 20 * time.Millisecond, Hooks: failUnlock, ReleaseAbandoned: releaser("a")}); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("a: want ErrTimedOut, got %v", err)
	}
	blocked.Lock()
	w := blocked.m[data]
	blocked.Unlock()
	if w == nil {
		t.Fatal("a left no kernel waiter")
	}
	if _, err := Acquire(data, Options{Wait: 20 * time.Millisecond, ReleaseAbandoned: releaser("b")}); !errors.Is(err, ErrTimedOut) {
		t.Fatalf("b: want ErrTimedOut, got %v", err)
	}
	blocked.Lock()
	same := blocked.m[data] == w
	blocked.Unlock()
	if !same {
		t.Fatal("b did not take the abandoned waiter over")
	}
	mustUnlock(t, holder)
	select {
	case c := <-calls:
		if c.who != "b" || c.path != data || !errors.Is(c.err, unix.EIO) {
			t.Fatalf("ReleaseAbandoned of %s for %s, release error %v; want b's, for %s, with EIO", c.who, c.path, c.err, data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReleaseAbandoned was never called")
	}
	waitNoBlocked(t)
	select {
	case c := <-calls:
		t.Fatalf("ReleaseAbandoned called again, of %s", c.who)
	default:
	}
	// The failed LOCK_UN closed the descriptor, which dropped the lock.
	if !lockFreeElsewhere(t, data+SidecarSuffix) {
		t.Fatal("the abandoned waiter's lock is still held")
	}
}
