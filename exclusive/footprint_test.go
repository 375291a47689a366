package exclusive

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/lockfile"
)

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Issue #16 item 10: a read-only session on a missing file fails with the
// not-exist error (as the open would) and leaves nothing on disk: no
// sidecar. A read-write session on the same path still creates the table
// and its sidecar.
func TestReadOnlyMissingLeavesNoFootprint(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "t.dets")
	before := listDir(t, dir)
	called := false
	for _, w := range []Wait{Immediate, WaitUpTo(time.Second)} {
		err := With(path, Options{ReadOnly: true, Wait: w}, func(*dets.Table) error { called = true; return nil })
		var se *SessionError
		if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &se) || se.Stage != OpenFailure || Code(err) != "open_failed" {
			t.Fatalf("%v: want an open failure matching fs.ErrNotExist, got %v (%s)", w, err, Code(err))
		}
		if m := Message(err); m != "Opening the table failed: no such file or directory." {
			t.Fatalf("message %q", m)
		}
	}
	if called {
		t.Fatal("callback ran")
	}
	if after := listDir(t, dir); !slices.Equal(before, after) {
		t.Fatalf("directory changed: %v before, %v after", before, after)
	}

	if err := With(path, Options{}, noop); err != nil {
		t.Fatalf("read-write session: %v", err)
	}
	want := append(slices.Clone(before), "t.dets", "t.dets"+lockfile.SidecarSuffix)
	slices.Sort(want)
	if after := listDir(t, dir); !slices.Equal(want, after) {
		t.Fatalf("after a read-write session: %v, want %v", after, want)
	}
	// Now the file exists, read-only sessions open it.
	if err := With(path, Options{ReadOnly: true}, noop); err != nil {
		t.Fatalf("read-only on the created table: %v", err)
	}
}
