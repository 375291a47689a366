package dets

import (
	"errors"
	"github.com/godets/godets/internal/testutil"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/godets/godets/etf"
)

// TestMappedDiskFull fills a 4 MiB tmpfs through a mapped table. The write
// that finds the disk full fails with ENOSPC (no fault, no panic); every
// insert acknowledged before it survives in a repair of the file.
func TestMappedDiskFull(t *testing.T) {
	dir := testutil.SmallTmpfs(t, "4m")

	path := filepath.Join(dir, "full.dets")
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(Set)
	var failed etf.Term
	for i := range 100000 {
		o := paddedObj(i, i, 1500)
		if err = tab.Insert(o); err != nil {
			failed = o
			break
		}
		m.Insert(o)
	}
	t.Logf("after %d inserts: %v", m.Len(), err)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("insert on a full disk: %v, want ENOSPC", err)
	}
	if tab.mm == nil {
		t.Fatal("the table was never mapped")
	}
	if m.Len() < 1000 {
		t.Fatalf("only %d inserts before the disk was full", m.Len())
	}
	if cerr := tab.Close(); cerr == nil {
		t.Fatal("Close after a failed write returned nil")
	}

	saved := filepath.Join(t.TempDir(), "saved.dets")
	writeFileT(t, saved, readFileT(t, path))
	rtab, err := Open(saved, Options{Repair: AutoRepair})
	if err != nil {
		t.Fatalf("repair: %v", err)
	}
	rtab.Close()
	got, want := reopenClean(t, saved), m.Objects()
	if !slices.Equal(got, want) {
		m.Insert(failed) // the failed insert may have reached the disk
		if !slices.Equal(got, m.Objects()) {
			t.Fatalf("repaired %d objects, want the %d acknowledged ones", len(got), len(want))
		}
	}
}

// TestExtendWithZeros: an extension writes zeros after the file's bytes,
// to the exact size; one that finds the disk full (a 1 MiB tmpfs) fails
// with ENOSPC and leaves the file as it was.
func TestExtendWithZeros(t *testing.T) {
	check := func(t *testing.T, dir string, cur, size int64, wantErr error) {
		t.Helper()
		path := filepath.Join(dir, "ext")
		head := slices.Repeat([]byte{0xAB}, int(cur))
		writeFileT(t, path, head)
		f, err := OSFS{}.OpenFile(path, os.O_RDWR, 0)
		must(t, err)
		defer f.Close()
		err = extendWithZeros(f, cur, size)
		got := readFileT(t, path)
		if wantErr != nil {
			if !errors.Is(err, wantErr) {
				t.Fatalf("extension to %d: %v, want %v", size, err, wantErr)
			}
			if !slices.Equal(got, head) {
				t.Fatalf("after the failed extension the file has %d bytes, want its %d", len(got), cur)
			}
			return
		}
		must(t, err)
		if int64(len(got)) != size || !slices.Equal(got[:cur], head) {
			t.Fatalf("extension to %d: %d bytes, head intact %v", size, len(got), slices.Equal(got[:min(cur, int64(len(got)))], head))
		}
		if i := slices.IndexFunc(got[cur:], func(b byte) bool { return b != 0 }); i >= 0 {
			t.Fatalf("extension to %d: byte %d is %#x, want 0", size, cur+int64(i), got[cur+int64(i)])
		}
	}
	for _, c := range [][2]int64{{0, 1}, {100, 100}, {1000, 1 << 20}, {4097, 3<<20 + 5}} {
		check(t, t.TempDir(), c[0], c[1], nil)
	}
	dir := testutil.SmallTmpfs(t, "1m")
	check(t, dir, 512<<10, 4<<20, syscall.ENOSPC)
}
