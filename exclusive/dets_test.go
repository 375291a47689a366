package exclusive

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/lockfile"
)

// Sessions with the real engine: create, write, read back in a later
// session; read-only sessions refuse writes.
func TestWithDetsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	opts := Options{Table: dets.Options{Kind: dets.Bag}}
	err := With(path, opts, func(tb *dets.Table) error {
		return tb.Insert(etf.Tuple{etf.Atom("k"), etf.Int(1)}, etf.Tuple{etf.Atom("k"), etf.Int(2)})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Do(path, Options{Wait: WaitUpTo(100 * time.Millisecond)}, func(tb *dets.Table) (int, error) {
		objs, err := tb.Lookup(etf.Atom("k"))
		return len(objs), err
	})
	if err != nil || got != 2 {
		t.Fatalf("bag lookup: %d %v", got, err)
	}
	// A read-only session refuses writes; the error is the callback's.
	err = With(path, Options{ReadOnly: true}, func(tb *dets.Table) error {
		return tb.Insert(etf.Tuple{etf.Atom("k"), etf.Int(3)})
	})
	var se *SessionError
	if !errors.As(err, &se) || se.Stage != CallbackFailure || !errors.Is(err, dets.ErrReadOnly) {
		t.Fatalf("read-only insert: %v", err)
	}
	// ReadOnly on a missing file is an open failure, with the lock released.
	missing := filepath.Join(t.TempDir(), "m.dets")
	err = With(missing, Options{ReadOnly: true}, noop)
	if !errors.As(err, &se) || se.Stage != OpenFailure || Code(err) != "open_failed" {
		t.Fatalf("read-only missing: %v", err)
	}
	if !lockIsFree(t, missing) {
		t.Fatal("lock kept")
	}
}

// A non-DETS file gives SessionFailed(OpenFailure) with code not_dets.
func TestOpenNotDETS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	if err := os.WriteFile(path, []byte("this is not a dets file at all, just text............"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := With(path, Options{}, noop)
	if !errors.Is(err, dets.ErrNotDETS) || Code(err) != "not_dets" {
		t.Fatalf("got %v (%s)", err, Code(err))
	}
}

// closeFailFS makes every file's Close fail after really closing it.
type closeFailFS struct{ dets.OSFS }

type closeFailFile struct{ dets.File }

var errInjectedClose = errors.New("injected close failure")

func (closeFailFile) Close() error { return errInjectedClose }

func (c closeFailFS) OpenFile(name string, flag int, perm fs.FileMode) (dets.File, error) {
	f, err := c.OSFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return closeFailFile{f}, nil
}

// Behaviour 42 through the engine's FS hook: a failing table close gives
// CleanupFailed, keeps the lock and quarantines the file.
func TestDetsCloseFailureQuarantines(t *testing.T) {
	captureLog(t)
	path := filepath.Join(t.TempDir(), "t.dets")
	err := With(path, Options{Table: dets.Options{FS: closeFailFS{}}}, func(tb *dets.Table) error {
		return tb.Insert(etf.Tuple{etf.Atom("k"), etf.Int(1)})
	})
	var ce *CleanupError
	if !errors.As(err, &ce) || !errors.Is(err, errInjectedClose) || ce.Primary != nil {
		t.Fatalf("got %v", err)
	}
	if lockIsFree(t, path) {
		t.Fatal("lock released after a failed close")
	}
	err = With(path, Options{}, noop)
	if !errors.Is(err, ErrQuarantined) {
		t.Fatalf("later session: %v", err)
	}
	if Message(err) == "" || Code(err) != "quarantined" {
		t.Fatal("code/message")
	}
}

// A table already open in this process outside a session is refused after
// the lock is taken, and the lock is released again.
func TestAlreadyOpenRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	old := openElsewhere
	t.Cleanup(func() { openElsewhere = old })
	var asked string
	openElsewhere = func(l *lockfile.Lock) bool { asked = l.DataPath(); return true }
	f := newFixture(t)
	f.path = path
	err := f.run(Immediate, func(*fakeTable) error { return nil })
	if !errors.Is(err, ErrAlreadyOpen) || Code(err) != "already_open" || f.opens.Load() != 0 {
		t.Fatalf("got %v", err)
	}
	if asked != path {
		t.Fatalf("asked about %q, want the resolved path %q", asked, path)
	}
	if !lockIsFree(t, path) {
		t.Fatal("lock kept")
	}
}

// A nil callback is refused before any file system access.
func TestNilCallback(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	if err := With(path, Options{}, nil); !errors.Is(err, ErrNilCallback) || Code(err) != "invalid_callback" {
		t.Fatalf("With: %v", err)
	}
	if _, err := Do[int](path, Options{}, nil); !errors.Is(err, ErrNilCallback) {
		t.Fatalf("Do: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("touched the file system: %v", ents)
	}
}

// TestAlreadyOpenRefusedReal opens a table directly with dets.Open and checks
// that a session on the same file, through a symlink alias, is refused.
func TestAlreadyOpenRefusedReal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("dets has no file identities on Windows: a table open through dets.Open is not detected (package doc)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	tab, err := dets.Open(path, dets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(dir, "alias.dets")
	if err := os.Symlink(path, alias); err != nil {
		t.Fatal(err)
	}
	called := false
	err = With(alias, Options{}, func(*dets.Table) error { called = true; return nil })
	if !errors.Is(err, ErrAlreadyOpen) || called {
		t.Fatalf("session on a directly opened table: err=%v called=%v, want ErrAlreadyOpen and no callback", err, called)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if err := With(alias, Options{}, func(*dets.Table) error { called = true; return nil }); err != nil || !called {
		t.Fatalf("after Close: err=%v called=%v", err, called)
	}
}

// TestNULPathRefused: a path holding a NUL is refused before any lock or
// open. The kernel reads such a name only up to the NUL, so "t.dets\x00x"
// took t.dets itself as its sidecar and ran a session on the table while
// another held the table's lock.
func TestNULPathRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.dets")
	if err := With(p, Options{}, func(*dets.Table) error { return nil }); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	err = Locked(p, Options{}, func(string) error {
		for _, q := range []string{p + "\x00x", p + "\x00", "\x00" + p} {
			ran := false
			err := With(q, Options{}, func(*dets.Table) error { ran = true; return nil })
			var ae *AcquisitionError
			if ran || !errors.As(err, &ae) || !errors.Is(err, ErrUnsafeAlias) {
				t.Errorf("%q: ran %v, err %v (%s), want a refusal as an unsafe alias", q, ran, err, Code(err))
			}
			if _, err := lockfile.Acquire(q, lockfile.Options{}); err == nil {
				t.Errorf("lockfile.Acquire(%q) took a lock", q)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(p); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the table changed (%v)", err)
	}
}
