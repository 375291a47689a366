package dets

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// TestOpenFileOwnsTheFile opens a table from an *os.File: the table works,
// and Close (or a failed open) closes the caller's file.
func TestOpenFileOwnsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.dets")
	tab := mustOpen(t, path, Options{})
	if err := tab.Insert(tup(etf.Int(1), bin("one"))); err != nil {
		t.Fatal(err)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	tab, err = OpenFile(f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tab.Path() != path || !IsOpen(path) {
		t.Fatalf("path %q, IsOpen %v", tab.Path(), IsOpen(path))
	}
	objs, err := tab.Lookup(etf.Int(1))
	if err != nil || len(objs) != 1 {
		t.Fatalf("lookup: %v %v", objs, err)
	}
	if err := tab.Insert(tup(etf.Int(2), bin("two"))); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, tab)
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the caller's file after Close: %v, want os.ErrClosed", err)
	}

	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(f, Options{Kind: Bag}); !errors.Is(err, ErrKindMismatch) {
		t.Fatalf("kind mismatch: %v", err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("the caller's file after a refused open: %v, want os.ErrClosed", err)
	}
}

// TestOpenFileRepairs: a dirty file handed over with AutoRepair is repaired
// (the repair replaces the file; the table opens the new one by path).
func TestOpenFileRepairs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.dets")
	tab := mustOpen(t, path, Options{})
	for i := range 100 {
		if err := tab.Insert(tup(etf.Int(i), bin("v"))); err != nil {
			t.Fatal(err)
		}
	}
	img := readFileT(t, path) // dirty: the table is still open
	tab.Close()
	writeFileT(t, path, img)

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(f, Options{}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("NoRepair: %v", err)
	}
	if got := readFileT(t, path); string(got) != string(img) {
		t.Fatal("a refused file changed")
	}
	f, err = os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	tab, err = OpenFile(f, Options{Repair: AutoRepair})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	mustCheck(t, tab)
	if info, _ := tab.Info(); info.Size != 100 {
		t.Fatalf("%d objects after repair, want 100", info.Size)
	}
}

func mustOpen(t *testing.T, path string, opts Options) *Table {
	t.Helper()
	tab, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}
