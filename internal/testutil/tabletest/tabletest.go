// Package tabletest holds the test helpers that need a dets table: MemFS,
// the in-memory crashfs file system as a dets.FS, and OpenT, which opens a
// table whose Check and Close run in t.Cleanup.
//
// It is apart from internal/testutil because it imports dets: the internal
// tests of packages dets imports (etf, etf/matchspec) cannot import it.
package tabletest

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/godets/godets/dets"
	"github.com/godets/godets/internal/crashfs"
)

// MemFS adapts an in-memory crashfs.FS to dets.FS (crashfs returns its own
// *File type, which dets.FS cannot name). The embedded FS keeps crashfs's
// fault injection, hooks and crash images.
type MemFS struct {
	*crashfs.FS
	// LyingSync makes the Sync of every file opened afterwards a no-op
	// that reports success: a broken disk, for tests that must catch one.
	LyingSync bool
}

// NewMemFS returns an empty in-memory file system.
func NewMemFS() MemFS { return MemFS{FS: crashfs.New()} }

// OpenFile opens name in the in-memory file system.
func (m MemFS) OpenFile(name string, flag int, perm fs.FileMode) (dets.File, error) {
	f, err := m.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if m.LyingSync {
		return lyingFile{f}, nil
	}
	return f, nil
}

type lyingFile struct{ *crashfs.File }

func (lyingFile) Sync() error { return nil }

// OpenT opens a table and fails the test if it cannot. At cleanup the table
// must pass Check and close cleanly; a table the test closed itself is left
// alone.
func OpenT(t testing.TB, path string, opts dets.Options) *dets.Table {
	t.Helper()
	tab, err := dets.Open(path, opts)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { checkAndClose(t, path, tab) })
	return tab
}

// checkAndClose is OpenT's cleanup.
func checkAndClose(t testing.TB, path string, tab *dets.Table) {
	t.Helper()
	err := tab.Check()
	if errors.Is(err, dets.ErrClosed) {
		return
	}
	if err != nil {
		t.Errorf("%s: Check at cleanup: %v", path, err)
	}
	if err := tab.Close(); err != nil {
		t.Errorf("%s: Close at cleanup: %v", path, err)
	}
}
