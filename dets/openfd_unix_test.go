//go:build unix

package dets

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
	"golang.org/x/sys/unix"
)

// openFD opens path read-write and returns the descriptor with its fstat.
func openFD(t *testing.T, path string) (int, unix.Stat_t) {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	return fd, st
}

func fdIsOpen(fd int) bool {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err == nil
}

// TestOpenDescriptor: a table on a bare descriptor reads, writes (through
// the memory map once it is long-lived), registers its identity, and
// closes the descriptor on Close and on a refused open.
func TestOpenDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.dets")
	tab := mustOpen(t, path, Options{})
	for i := range 300 {
		if err := tab.Insert(tup(etf.Int(i), etf.Int(i*i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}

	fd, st := openFD(t, path)
	tab, err := OpenDescriptor(fd, path, st.Size, uint64(st.Dev), uint64(st.Ino), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !IsOpenID(uint64(st.Dev), uint64(st.Ino)) || !IsOpen(path) {
		t.Fatal("a table on a descriptor is not registered as open")
	}
	for round := range 2 {
		for i := range 300 {
			objs, err := tab.Lookup(etf.Int(i))
			if err != nil || len(objs) != 1 || objs[0].(etf.Tuple)[1] != etf.Int(i*i) {
				t.Fatalf("round %d, key %d: %v %v", round, i, objs, err)
			}
		}
	}
	for i := 300; i < 600; i++ {
		if err := tab.Insert(tup(etf.Int(i), etf.Int(i*i))); err != nil {
			t.Fatal(err)
		}
	}
	if tab.mm == nil || !tab.mmWritable {
		t.Fatal("a long-lived table on a descriptor is not mapped read-write")
	}
	mustCheck(t, tab)
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if fdIsOpen(fd) {
		t.Fatal("Close left the descriptor open")
	}
	if IsOpenID(uint64(st.Dev), uint64(st.Ino)) {
		t.Fatal("still registered after Close")
	}
	ro := openT(t, path, Options{ReadOnly: true})
	if info, err := ro.Info(); err != nil || info.Size != 600 {
		t.Fatalf("reopened: %+v %v, want 600 objects", info, err)
	}
	ro.Close()

	fd, st = openFD(t, path)
	if _, err := OpenDescriptor(fd, path, st.Size, uint64(st.Dev), uint64(st.Ino), Options{Kind: Bag}); !errors.Is(err, ErrKindMismatch) {
		t.Fatalf("kind mismatch: %v", err)
	}
	if fdIsOpen(fd) {
		t.Fatal("a refused open left the descriptor open")
	}
	fd, st = openFD(t, path)
	if _, err := OpenDescriptor(fd, path, st.Size, uint64(st.Dev), uint64(st.Ino), Options{KeyPos: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("invalid options: %v, want ErrInvalidOptions", err)
	}
	if fdIsOpen(fd) {
		t.Fatal("invalid options left the descriptor open")
	}
}
