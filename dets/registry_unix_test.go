//go:build unix

package dets

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestIsOpenIDTracksOpenTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	dev, ino := uint64(st.Dev), uint64(st.Ino)
	if !IsOpenID(dev, ino) {
		t.Fatal("IsOpenID false for an open table")
	}
	if IsOpenID(dev, ino+1) || IsOpenID(dev+1, ino) {
		t.Fatal("IsOpenID true for another identity")
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if IsOpenID(dev, ino) {
		t.Fatal("IsOpenID after Close")
	}
}
