package tabletest

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/etf"
	"github.com/godets/godets/internal/crashfs"
)

func TestMemFSOpenTRoundTrip(t *testing.T) {
	mem := NewMemFS()
	var tab *dets.Table
	t.Run("open", func(t *testing.T) {
		tab = OpenT(t, "a.dets", dets.Options{FS: mem})
		if err := tab.Insert(etf.Tuple{etf.Atom("k"), etf.Int(1)}); err != nil {
			t.Fatal(err)
		}
	})
	// The subtest's cleanup checked and closed the table.
	if _, err := tab.Lookup(etf.Atom("k")); !errors.Is(err, dets.ErrClosed) {
		t.Fatalf("after cleanup: %v, want ErrClosed", err)
	}
	if !mem.Exists("a.dets") || len(mem.Get("a.dets")) == 0 {
		t.Fatal("no file in the in-memory FS")
	}
	reopened := OpenT(t, "a.dets", dets.Options{FS: mem})
	objs, err := reopened.Lookup(etf.Atom("k"))
	if err != nil || len(objs) != 1 {
		t.Fatalf("reopened: %v %v", objs, err)
	}
}

func TestMemFSLyingSync(t *testing.T) {
	mem := NewMemFS()
	mem.LyingSync = true
	f, err := mem.OpenFile("x", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abc"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// A synced-only crash image keeps nothing a lying Sync "saved".
	if got := mem.Crash(crashfs.SyncedOnly, nil).Get("x"); len(got) != 0 {
		t.Fatalf("lying sync persisted %q", got)
	}
	if _, ok := f.(lyingFile); !ok {
		t.Fatalf("LyingSync file is %T", f)
	}
}

// recordingTB collects what OpenT reports, and the cleanups it registers,
// so that a failing cleanup can be seen without failing this test.
type recordingTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper()                   {}
func (r *recordingTB) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(f string, a ...any) { r.errors = append(r.errors, fmt.Sprintf(f, a...)) }

func TestOpenTReportsAFailingClose(t *testing.T) {
	mem := NewMemFS()
	rec := &recordingTB{TB: t}
	tab := OpenT(rec, "a.dets", dets.Options{FS: mem})
	if err := tab.Insert(etf.Tuple{etf.Atom("k"), etf.Int(1)}); err != nil {
		t.Fatal(err)
	}
	mem.Inject(crashfs.OpWrite, 1, syscall.ENOSPC, true) // the disk fills
	for _, f := range rec.cleanups {
		f()
	}
	if len(rec.errors) == 0 {
		t.Fatal("a Close that could not write went unreported")
	}
	t.Logf("reported: %q", rec.errors)
}
