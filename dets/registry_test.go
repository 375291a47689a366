package dets

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

func TestIsOpenTracksOpenTables(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.dets")
	if IsOpen(path) {
		t.Fatal("IsOpen before Open")
	}
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(dir, "alias")
	if err := os.Symlink(path, alias); err != nil {
		t.Fatal(err)
	}
	if !IsOpen(path) || !IsOpen(alias) {
		t.Fatal("IsOpen false for an open table or its symlink")
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if IsOpen(path) {
		t.Fatal("IsOpen after Close")
	}
	if err := tab.Close(); err != nil || IsOpen(path) {
		t.Fatalf("second Close: err=%v open=%v", err, IsOpen(path))
	}
}

func TestUpdateCounterMissingKey(t *testing.T) {
	tab := openT(t, filepath.Join(t.TempDir(), "c.dets"), Options{})
	_, err := tab.UpdateCounter(etf.Atom("nope"), 0, 1)
	if !errors.Is(err, ErrNoSuchKey) || !errors.Is(err, ErrBadArgument) {
		t.Fatalf("err = %v, want ErrNoSuchKey matching ErrBadArgument", err)
	}
}
