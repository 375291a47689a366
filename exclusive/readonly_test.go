package exclusive

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/lockfile"
)

// damagedTable writes a closed set table whose one object has 12 bytes
// overwritten inside its term encoding, and returns its path and bytes.
func damagedTable(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.dets")
	payload := strings.Repeat("P", 40)
	tb, err := dets.Open(path, dets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Insert(etf.Tuple{etf.Atom("k"), etf.Binary(payload)}); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(payload))
	if i < 5 {
		t.Fatalf("payload not found in the file")
	}
	// From the binary's tag (5 bytes before its contents) on: an unknown
	// tag and a broken length.
	copy(b[i-5:], bytes.Repeat([]byte{0xff}, 12))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, b
}

// #16 item 1: a read error in a read-only session is the callback's error.
// The close that follows (which this branch's dets still fails with the
// stored read error) must not quarantine the file or keep its lock.
func TestReadOnlyReadErrorIsNotQuarantined(t *testing.T) {
	logs := captureLog(t)
	path, want := damagedTable(t)
	var seen error
	err := With(path, Options{ReadOnly: true}, func(tb *dets.Table) error {
		for _, err := range tb.All() {
			if err != nil {
				seen = err
				return err
			}
		}
		return nil
	})
	if !errors.Is(seen, dets.ErrCorrupt) {
		t.Fatalf("the traversal gave %v, want a corruption error", seen)
	}
	var se *SessionError
	var ce *CleanupError
	if errors.As(err, &ce) || !errors.As(err, &se) || se.Stage != CallbackFailure || !errors.Is(err, seen) || se.Close != nil {
		t.Fatalf("got %v, want the callback's failure", err)
	}
	if Code(err) != "callback_failed" || CauseCode(err) != "corrupt" {
		t.Fatalf("code %s (cause %s), want callback_failed (corrupt)", Code(err), CauseCode(err))
	}
	t.Logf("%s: %s\n%v", Code(err), Message(err), err)
	if !lockIsFree(t, path) {
		t.Fatal("lock kept after a read-only session")
	}
	if err := With(path, Options{ReadOnly: true}, noop); err != nil {
		t.Fatalf("the next session: %v", err)
	}
	if strings.Contains(logs.String(), EventCleanupFailed) {
		t.Fatalf("logged a cleanup failure: %s", logs)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the file changed (%v)", err)
	}
}

// A read-only table whose close fails after the callback failed: the
// callback's failure is returned with the close error beside it, the lock
// is released, and nothing is quarantined or logged.
func TestReadOnlyCloseFailureAfterCallbackError(t *testing.T) {
	logs := captureLog(t)
	f := newFixture(t)
	f.readOnly = true
	f.closeErr = errors.New("injected close failure")
	mine := errors.New("mine")
	err := f.run(Immediate, func(*fakeTable) error { return mine })
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != CallbackFailure || !errors.Is(err, mine) ||
		!errors.Is(err, f.closeErr) || !errors.Is(se.Close, f.closeErr) || errors.Is(err, ErrCleanupFailed) {
		t.Fatalf("got %v", err)
	}
	if Code(err) != "callback_failed" || !lockIsFree(t, f.path) {
		t.Fatalf("code %s, or lock kept", Code(err))
	}
	if err := f.run(Immediate, func(*fakeTable) error { return nil }); !errors.Is(err, f.closeErr) {
		t.Fatalf("next session: %v, want its own close failure, not a quarantine", err)
	}
	if logs.String() != "" {
		t.Fatalf("logged: %s", logs)
	}
}

// A read-only close that fails with the error the callback returned is
// not reported twice.
func TestReadOnlyCloseRepeatingCallbackError(t *testing.T) {
	f := newFixture(t)
	f.readOnly = true
	f.closeErr = errors.New("stored read error")
	err := f.run(Immediate, func(*fakeTable) error { return fmt.Errorf("reading: %w", f.closeErr) })
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != CallbackFailure || se.Close != nil || !errors.Is(err, f.closeErr) {
		t.Fatalf("got %v", err)
	}
	if strings.Count(err.Error(), "stored read error") != 1 {
		t.Fatalf("reported twice: %v", err)
	}
}

// After a successful callback a failed read-only close is a SessionError
// of stage CloseFailure, with the value; the lock is released.
func TestReadOnlyCloseFailureAfterSuccess(t *testing.T) {
	captureLog(t)
	f := newFixture(t)
	f.readOnly = true
	f.closeErr = errors.New("injected close failure")
	v, err := session1(f, Immediate, func(*fakeTable) (int, error) { return 7, nil })
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != CloseFailure || !errors.Is(err, f.closeErr) || v != 7 {
		t.Fatalf("got %v %v", v, err)
	}
	if Code(err) != "close_failed" || strings.Contains(Message(err), "quarantine") {
		t.Fatalf("code %s, message %q", Code(err), Message(err))
	}
	if !lockIsFree(t, f.path) {
		t.Fatal("lock kept")
	}
	f.closeErr = nil
	for _, tb := range f.tables {
		tb.closeErr = nil
	}
	if err := f.run(Immediate, func(*fakeTable) error { return nil }); err != nil {
		t.Fatalf("next session: %v", err)
	}
}

// A panic whose read-only close fails releases the lock, logs a warning
// (there is no error to return it in) and re-panics; no quarantine.
func TestPanicWithReadOnlyCloseFailure(t *testing.T) {
	logs := captureLog(t)
	f := newFixture(t)
	f.readOnly = true
	f.closeErr = errors.New("injected close failure")
	var got any
	func() {
		defer func() { got = recover() }()
		_ = f.run(Immediate, func(*fakeTable) error { panic("boom") })
	}()
	out := logs.String()
	if got != "boom" || !strings.Contains(out, "event="+EventCloseFailed) || strings.Contains(out, EventCleanupFailed) {
		t.Fatalf("recovered %v, log %s", got, out)
	}
	if !lockIsFree(t, f.path) {
		t.Fatal("lock kept")
	}
}

// A release failure of a read-only session still quarantines, and the
// failed close is kept with it.
func TestReadOnlyUnlockFailureQuarantines(t *testing.T) {
	captureLog(t)
	f := newFixture(t)
	f.readOnly = true
	f.closeErr = errors.New("injected close failure")
	unlockErr := errors.New("injected unlock failure")
	f.hooks.unlock = func(l *lockfile.Lock) error { _ = l.Unlock(); return unlockErr }
	err := f.run(Immediate, func(*fakeTable) error { return nil })
	var ce *CleanupError
	if !errors.As(err, &ce) || !errors.Is(err, unlockErr) || !errors.Is(err, f.closeErr) {
		t.Fatalf("got %v", err)
	}
	wantQuarantined(t, f)
}

// SetLogger redirects the records (and silences them with a discarding
// handler); nil goes back to slog.Default.
func TestSetLogger(t *testing.T) {
	var def bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	t.Cleanup(func() { slog.SetDefault(old); SetLogger(nil) })
	quarantineOnce := func() {
		f := newFixture(t)
		f.closeErr = errors.New("injected close failure")
		if err := f.run(Immediate, func(*fakeTable) error { return nil }); !errors.Is(err, ErrCleanupFailed) {
			t.Fatalf("got %v", err)
		}
	}
	SetLogger(slog.New(slog.DiscardHandler))
	quarantineOnce()
	if def.Len() != 0 {
		t.Fatalf("a silenced logger wrote to the default: %s", def.String())
	}
	var mine bytes.Buffer
	SetLogger(slog.New(slog.NewTextHandler(&mine, nil)))
	quarantineOnce()
	if def.Len() != 0 || !strings.Contains(mine.String(), EventCleanupFailed) {
		t.Fatalf("default %q, redirected %q", def.String(), mine.String())
	}
	SetLogger(nil)
	quarantineOnce()
	if !strings.Contains(def.String(), EventCleanupFailed) {
		t.Fatalf("nil did not restore slog.Default: %q", def.String())
	}
}
