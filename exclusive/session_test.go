package exclusive

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/godets/godets/internal/lockfile"
)

// fakeTable stands in for *dets.Table so the session machinery can be tested
// without the engine.
type fakeTable struct {
	log      *recorder
	closeErr error
	closed   atomic.Bool
}

func (f *fakeTable) Close() error {
	f.log.add("close")
	f.closed.Store(true)
	return f.closeErr
}

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(e string) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// fixture is one fake-table session setup.
type fixture struct {
	t        *testing.T
	path     string
	rec      *recorder
	opens    atomic.Int32
	openErr  error
	closeErr error
	readOnly bool // the fake table counts as opened read-only
	tables   []*fakeTable
	hooks    *testHooks
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, path: filepath.Join(t.TempDir(), "t.dets"), rec: &recorder{}}
	f.hooks = &testHooks{unlock: func(l *lockfile.Lock) error {
		f.rec.add("unlock")
		return l.Unlock()
	}}
	return f
}

func (f *fixture) open(l *lockfile.Lock) (*fakeTable, error) {
	f.opens.Add(1)
	f.rec.add("open")
	if f.openErr != nil {
		return nil, f.openErr
	}
	tb := &fakeTable{log: f.rec, closeErr: f.closeErr}
	f.tables = append(f.tables, tb)
	return tb, nil
}

func session1[T any](f *fixture, wait Wait, fn func(*fakeTable) (T, error)) (T, error) {
	return run(f.path, wait, f.hooks, runMode{readOnly: f.readOnly}, f.open, fn)
}

func (f *fixture) run(wait Wait, fn func(*fakeTable) error) error {
	_, err := session1(f, wait, func(tb *fakeTable) (int, error) {
		f.rec.add("callback")
		return 0, fn(tb)
	})
	return err
}

// captureLog routes slog output for the test into a buffer.
func captureLog(t *testing.T) *syncBuffer {
	t.Helper()
	buf := &syncBuffer{}
	SetLogger(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { SetLogger(nil) })
	return buf
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Behaviour 1: a negative wait fails before touching the file system.
func TestInvalidWait(t *testing.T) {
	f := newFixture(t)
	err := f.run(WaitUpTo(-time.Millisecond), func(*fakeTable) error { return nil })
	if !errors.Is(err, ErrInvalidWait) || Code(err) != "invalid_wait" {
		t.Fatalf("got %v (%s)", err, Code(err))
	}
	ents, _ := os.ReadDir(filepath.Dir(f.path))
	if len(ents) != 0 || f.opens.Load() != 0 {
		t.Fatalf("touched the file system: %v, opens %d", ents, f.opens.Load())
	}
}

// Behaviours 10, 36 and 41: a session creates the sidecar, opens once, and
// runs open < callback < close < unlock.
func TestSessionOrder(t *testing.T) {
	f := newFixture(t)
	v, err := session1(f, Immediate, func(tb *fakeTable) (string, error) {
		f.rec.add("callback")
		if lockIsFree(t, f.path) {
			t.Error("lock not held during callback")
		}
		return "value", nil
	})
	if err != nil || v != "value" {
		t.Fatalf("got %q %v", v, err)
	}
	if want := []string{"open", "callback", "close", "unlock"}; !slices.Equal(f.rec.get(), want) {
		t.Fatalf("order %v, want %v", f.rec.get(), want)
	}
	if fi, err := os.Lstat(f.path + lockfile.SidecarSuffix); err != nil || fi.Size() != 0 {
		t.Fatalf("sidecar: %v", err)
	}
	if !lockIsFree(t, f.path) {
		t.Fatal("lock still held")
	}
}

// Behaviours 13 and 36: a nested session on the same file contends like
// another process and never re-enters; the opener runs only when acquired.
func TestNestedSessionContends(t *testing.T) {
	f := newFixture(t)
	err := f.run(Immediate, func(*fakeTable) error {
		if err := f.run(Immediate, func(*fakeTable) error { return nil }); !errors.Is(err, ErrBusy) || Code(err) != "busy" {
			return fmt.Errorf("nested Immediate: %v", err)
		}
		start := time.Now()
		err := f.run(WaitUpTo(60*time.Millisecond), func(*fakeTable) error { return nil })
		if !errors.Is(err, ErrTimedOut) || errors.Is(err, ErrBusy) || time.Since(start) < 60*time.Millisecond {
			return fmt.Errorf("nested WaitUpTo: %v", err)
		}
		var ae *AcquisitionError
		if !errors.As(err, &ae) {
			return fmt.Errorf("not an AcquisitionError: %T", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := f.opens.Load(); n != 1 {
		t.Fatalf("opener called %d times", n)
	}
}

// Behaviour 13: goroutines on one file never run callbacks concurrently.
func TestGoroutinesSerialize(t *testing.T) {
	f := newFixture(t)
	var inside, maxInside atomic.Int32
	counter := 0 // protected only by the session; the race detector checks that
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				err := f.run(WaitUpTo(5*time.Second), func(*fakeTable) error {
					n := inside.Add(1)
					if n > maxInside.Load() {
						maxInside.Store(n)
					}
					counter++
					time.Sleep(100 * time.Microsecond)
					inside.Add(-1)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if maxInside.Load() != 1 || counter != 40 {
		t.Fatalf("max concurrent callbacks %d, counter %d", maxInside.Load(), counter)
	}
}

// Behaviour 52: sessions on different files do not block each other.
func TestDistinctFilesDoNotBlock(t *testing.T) {
	a, b := newFixture(t), newFixture(t)
	b.path = filepath.Join(filepath.Dir(a.path), "b.dets")
	err := a.run(Immediate, func(*fakeTable) error {
		return b.run(Immediate, func(*fakeTable) error { return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Behaviour 37: an open failure is SessionFailed(OpenFailure), without the
// callback, with the lock released.
func TestOpenFailure(t *testing.T) {
	f := newFixture(t)
	f.openErr = fmt.Errorf("open: %w", syscall.EACCES)
	called := false
	err := f.run(Immediate, func(*fakeTable) error { called = true; return nil })
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != OpenFailure || !errors.Is(err, syscall.EACCES) || called {
		t.Fatalf("got %v, called %v", err, called)
	}
	if Code(err) != "open_failed" || !lockIsFree(t, f.path) {
		t.Fatalf("code %s, or lock kept", Code(err))
	}
	if want := []string{"open", "unlock"}; !slices.Equal(f.rec.get(), want) {
		t.Fatalf("order %v", f.rec.get())
	}
}

// Behaviour 38: a callback error is SessionFailed(CallbackFailure) after
// close and release.
func TestCallbackError(t *testing.T) {
	f := newFixture(t)
	mine := errors.New("mine")
	var tb *fakeTable
	err := f.run(Immediate, func(x *fakeTable) error { tb = x; return mine })
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != CallbackFailure || !errors.Is(err, mine) || Code(err) != "callback_failed" {
		t.Fatalf("got %v", err)
	}
	if !tb.closed.Load() || !lockIsFree(t, f.path) {
		t.Fatal("not cleaned up")
	}
}

// Behaviour 39: a panic closes and releases, then continues with the
// original value.
func TestPanicCleansUpAndRepanics(t *testing.T) {
	f := newFixture(t)
	type marker struct{ n int }
	val := &marker{42}
	var got any
	func() {
		defer func() { got = recover() }()
		_ = f.run(Immediate, func(*fakeTable) error { panic(val) })
	}()
	if got != val {
		t.Fatalf("recovered %v, want the original value", got)
	}
	if want := []string{"open", "callback", "close", "unlock"}; !slices.Equal(f.rec.get(), want) {
		t.Fatalf("order %v", f.rec.get())
	}
	if !lockIsFree(t, f.path) {
		t.Fatal("lock kept after panic")
	}
}

// Behaviour 40: runtime.Goexit in the callback still cleans up.
func TestGoexitCleansUp(t *testing.T) {
	f := newFixture(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.run(Immediate, func(*fakeTable) error { runtime.Goexit(); return nil })
		t.Error("run returned after Goexit")
	}()
	<-done
	if want := []string{"open", "callback", "close", "unlock"}; !slices.Equal(f.rec.get(), want) {
		t.Fatalf("order %v", f.rec.get())
	}
	if !lockIsFree(t, f.path) {
		t.Fatal("lock kept after Goexit")
	}
}

func wantQuarantined(t *testing.T, f *fixture) {
	t.Helper()
	opens := f.opens.Load()
	err := f.run(WaitUpTo(10*time.Millisecond), func(*fakeTable) error { return nil })
	if !errors.Is(err, ErrQuarantined) || Code(err) != "quarantined" || f.opens.Load() != opens {
		t.Fatalf("want quarantine, got %v", err)
	}
}

// Behaviour 42: close failure after a good callback: CleanupFailed with no
// primary, the value returned, the lock kept, the file quarantined, a log.
func TestCloseFailureAfterSuccess(t *testing.T) {
	logs := captureLog(t)
	f := newFixture(t)
	closeErr := errors.New("injected close failure")
	f.closeErr = closeErr
	v, err := session1(f, Immediate, func(*fakeTable) (int, error) { return 7, nil })
	var ce *CleanupError
	if !errors.As(err, &ce) || ce.Primary != nil || len(ce.Failures) != 1 || !errors.Is(err, closeErr) || v != 7 {
		t.Fatalf("got %v %v", v, err)
	}
	if !errors.Is(err, ErrCleanupFailed) || Code(err) != "cleanup_failed" {
		t.Fatalf("code %s", Code(err))
	}
	if lockIsFree(t, f.path) {
		t.Fatal("lock released although the table failed to close")
	}
	if slices.Contains(f.rec.get(), "unlock") {
		t.Fatal("unlock attempted after close failure")
	}
	wantQuarantined(t, f)
	out := logs.String()
	if !strings.Contains(out, "event="+EventCleanupFailed) || !strings.Contains(out, "injected close failure") || !strings.Contains(out, "cause=return") {
		t.Fatalf("log: %s", out)
	}
}

// Behaviour 43: close failure after a failed callback keeps the callback
// failure as primary.
func TestCloseFailureAfterCallbackError(t *testing.T) {
	captureLog(t)
	f := newFixture(t)
	closeErr := errors.New("injected close failure")
	f.closeErr = closeErr
	mine := errors.New("mine")
	err := f.run(Immediate, func(*fakeTable) error { return mine })
	var ce *CleanupError
	var se *SessionError
	if !errors.As(err, &ce) || !errors.As(ce.Primary, &se) || se.Stage != CallbackFailure ||
		!errors.Is(err, mine) || !errors.Is(err, closeErr) {
		t.Fatalf("got %v", err)
	}
	wantQuarantined(t, f)
}

// Behaviour 44: an unlock failure is reported, the descriptor is still
// closed (so the kernel lock is gone), and the file is quarantined.
func TestUnlockFailure(t *testing.T) {
	captureLog(t)
	f := newFixture(t)
	unlockErr := errors.New("injected unlock failure")
	f.hooks.unlock = func(l *lockfile.Lock) error {
		if err := l.Unlock(); err != nil {
			return err
		}
		return unlockErr
	}
	err := f.run(Immediate, func(*fakeTable) error { return nil })
	var ce *CleanupError
	if !errors.As(err, &ce) || !errors.Is(err, unlockErr) || ce.Primary != nil {
		t.Fatalf("got %v", err)
	}
	if !lockIsFree(t, f.path) {
		t.Fatal("descriptor not closed")
	}
	wantQuarantined(t, f)
}

// An unlock failure after an open failure keeps the open failure as primary.
func TestUnlockFailureAfterOpenFailure(t *testing.T) {
	captureLog(t)
	f := newFixture(t)
	f.openErr = errors.New("open broke")
	f.hooks.unlock = func(l *lockfile.Lock) error { _ = l.Unlock(); return errors.New("unlock broke") }
	err := f.run(Immediate, func(*fakeTable) error { return nil })
	var ce *CleanupError
	var se *SessionError
	if !errors.As(err, &ce) || !errors.As(ce.Primary, &se) || se.Stage != OpenFailure {
		t.Fatalf("got %v", err)
	}
	wantQuarantined(t, f)
}

// A panic whose cleanup fails is logged, quarantines, and still re-panics.
func TestPanicWithCloseFailure(t *testing.T) {
	logs := captureLog(t)
	f := newFixture(t)
	f.closeErr = errors.New("injected close failure")
	var got any
	func() {
		defer func() { got = recover() }()
		_ = f.run(Immediate, func(*fakeTable) error { panic("boom") })
	}()
	if got != "boom" {
		t.Fatalf("recovered %v", got)
	}
	if !strings.Contains(logs.String(), "cause=panic_or_goexit") {
		t.Fatalf("log: %s", logs.String())
	}
	wantQuarantined(t, f)
}

// Behaviour 47: garbage collection inside the callback keeps the lock.
func TestGCInsideCallbackKeepsLock(t *testing.T) {
	f := newFixture(t)
	err := f.run(Immediate, func(*fakeTable) error {
		for range 3 {
			runtime.GC()
		}
		if lockIsFree(t, f.path) {
			return errors.New("lock lost after GC")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Behaviours 22, 24, 31: acquisition refusals map to their sentinels and codes.
func TestAcquisitionRefusals(t *testing.T) {
	dir := t.TempDir()
	dangling := filepath.Join(dir, "d.dets")
	if err := os.Symlink("nowhere", dangling); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "h.dets")
	if err := os.WriteFile(hard, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(hard, hard+"2"); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	for _, c := range []struct {
		path  string
		hooks *lockfile.Hooks
		want  error
		code  string
	}{
		{dangling, nil, ErrUnsafeAlias, "unsafe_alias"},
		{hard, nil, ErrUnsafeAlias, "unsafe_alias"},
		{filepath.Join(dir, "n.dets"), &lockfile.Hooks{FSType: func(uint32) uint32 { return 0x6969 }}, ErrUnsupportedFilesystem, "unsupported_filesystem"},
		{filepath.Join(dir, "missing", "x.dets"), nil, nil, "os_error"},
	} {
		f.path = c.path
		f.hooks.lock = c.hooks
		err := f.run(Immediate, func(*fakeTable) error { return nil })
		var ae *AcquisitionError
		if !errors.As(err, &ae) || ae.Reason != c.want || Code(err) != c.code {
			t.Fatalf("%s: got %v (%s)", c.path, err, Code(err))
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Fatalf("%s: errors.Is failed", c.path)
		}
	}
	if f.opens.Load() != 0 {
		t.Fatal("opened after a refused acquisition")
	}
}

// Code and Message never carry paths; Error does (for trusted logs).
func TestCodeAndMessageCarryNoPath(t *testing.T) {
	captureLog(t)
	secret := "SECRETxyzzy"
	dir := filepath.Join(t.TempDir(), secret)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, secret+".dets")
	if err := os.WriteFile(hard, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(hard, hard+"2"); err != nil {
		t.Fatal(err)
	}
	var errs []error
	mk := func(name string, setup func(f *fixture), fn func(*fakeTable) error) {
		f := newFixture(t)
		f.path = filepath.Join(dir, name)
		if setup != nil {
			setup(f)
		}
		errs = append(errs, f.run(Immediate, fn))
	}
	ok := func(*fakeTable) error { return nil }
	mk(secret+".dets", nil, ok) // hard link
	mk("missing-"+secret+"/x", nil, ok)
	mk("o.dets", func(f *fixture) { f.openErr = &os.PathError{Op: "open", Path: f.path, Err: syscall.EACCES} }, ok)
	mk("c.dets", nil, func(*fakeTable) error { return errors.New("callback says " + secret) })
	mk("cl.dets", func(f *fixture) { f.closeErr = errors.New("close " + secret) }, ok)
	mk("fs.dets", func(f *fixture) {
		f.hooks.lock = &lockfile.Hooks{FSType: func(uint32) uint32 { return 0x6969 }}
	}, ok)
	f := newFixture(t)
	f.path = filepath.Join(dir, "busy.dets")
	errs = append(errs, f.run(Immediate, func(*fakeTable) error {
		errs = append(errs, f.run(Immediate, ok))
		errs = append(errs, f.run(WaitUpTo(time.Millisecond), ok))
		return nil
	}))
	errs = append(errs, f.run(WaitUpTo(-1), ok))
	codes := map[string]bool{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		c, m := Code(err), Message(err)
		codes[c] = true
		if strings.Contains(c, secret) || strings.Contains(m, secret) || strings.Contains(m, dir) {
			t.Fatalf("%s leaks a path: %q", c, m)
		}
		if m == "" || strings.Contains(m, "\n") {
			t.Fatalf("bad message %q", m)
		}
		t.Logf("%-22s %s", c, m)
	}
	for _, want := range []string{"unsafe_alias", "os_error", "open_failed", "callback_failed", "cleanup_failed", "unsupported_filesystem", "busy", "timed_out", "invalid_wait"} {
		if !codes[want] {
			t.Errorf("no error produced code %s", want)
		}
	}
	if Code(nil) != "ok" || Code(errors.New("x")) != "error" {
		t.Fatal("Code of nil or foreign error")
	}
}

// A session of this process waiting for the lock when another's release
// fails must not run: the release quarantines the file. The waiter used to
// take the lock the moment the descriptor closed, before the quarantine
// was recorded, and ran its callback on the quarantined file. (If the
// waiter is not yet waiting when the release fails, the quarantine refuses
// it before its first attempt: either way it must not run.)
func TestWaiterRefusedAfterFailedRelease(t *testing.T) {
	captureLog(t)
	a := newFixture(t)
	a.hooks.unlock = func(l *lockfile.Lock) error {
		if err := l.Unlock(); err != nil {
			return err
		}
		return errors.New("injected unlock failure")
	}
	b := newFixture(t)
	b.path = a.path
	inA := make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		aDone <- a.run(Immediate, func(*fakeTable) error {
			close(inA)
			time.Sleep(100 * time.Millisecond) // let b start waiting
			return nil
		})
	}()
	<-inA
	bRan := false
	bErr := b.run(WaitUpTo(5*time.Second), func(*fakeTable) error { bRan = true; return nil })
	if errA := <-aDone; !errors.Is(errA, ErrCleanupFailed) {
		t.Fatalf("a: %v, want a cleanup failure", errA)
	}
	if bRan || !errors.Is(bErr, ErrQuarantined) {
		t.Fatalf("b: ran %v, err %v, want ErrQuarantined without running", bRan, bErr)
	}
	if b.opens.Load() != 0 {
		t.Fatal("b opened the quarantined table")
	}
}
