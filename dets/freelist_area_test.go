package dets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestHugeFreeListAreaRefused: a clean-looking sparse 3 GiB file whose
// trailer matches has a free-list area of 3 GiB. An open sized a buffer
// by it: on a 32-bit build that panicked (makeslice), on 64-bit it read
// gigabytes. Now the area is refused as no table could have written it:
// ErrNeedsRepair, the file unchanged. Found by an audit of the otp9 engine.
func TestHugeFreeListAreaRefused(t *testing.T) {
	path := tmpFile(t, "huge.dets")
	tb, err := Open(path, Options{})
	must(t, err)
	must(t, tb.Close())
	b := readFileT(t, path)
	const size = 3 << 30
	must(t, os.Truncate(path, size))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	var tr [4]byte // the trailer: the size less FlBase (docs/format-otp9.md)
	binary.BigEndian.PutUint32(tr[:], uint32(size-int64(binary.BigEndian.Uint32(b[offFlBase:]))))
	_, err = f.WriteAt(tr[:], size-4)
	must(t, err)
	must(t, f.Close())
	// The file is mostly a hole: its size, time and written ends stand
	// for its bytes (a write of any of them would change the time).
	stamp := func() string {
		fi, err := os.Stat(path)
		must(t, err)
		f, err := os.Open(path)
		must(t, err)
		defer f.Close()
		ends := make([]byte, 2*len(b))
		_, err = f.ReadAt(ends[:len(b)], 0)
		must(t, err)
		_, err = f.ReadAt(ends[len(b):], size-int64(len(b)))
		must(t, err)
		return fmt.Sprint(fi.Size(), fi.ModTime().UnixNano(), ends)
	}
	before := stamp()
	_, err = Open(path, Options{})
	var ce *CorruptionError
	if !errors.Is(err, ErrNeedsRepair) || !errors.As(err, &ce) || ce.Section != "freelist" {
		t.Fatalf("open: %v; want ErrNeedsRepair for the free lists", err)
	}
	if stamp() != before {
		t.Fatal("the refused open changed the file")
	}
	for _, c := range []struct {
		size, flp int64
		ok        bool
	}{
		{1400 + 16 + trailerSize, 1400, true},
		{size, 1400, false},
		{1 << 31, 1<<31 - maxFreeListArea - trailerSize, true},
		{1 << 31, 1<<31 - maxFreeListArea - trailerSize - 1, false},
		{1400, 1400, false},
	} {
		if _, ok := freeListArea(c.size, c.flp); ok != c.ok {
			t.Errorf("freeListArea(%d, %d): %v", c.size, c.flp, ok)
		}
	}
}
