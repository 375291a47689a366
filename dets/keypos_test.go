package dets

import (
	"bytes"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/godets/godets/etf"
)

// TestOpenHugeKeyPos: OTP creates and opens a table with any 32-bit key
// position (checked against erl: {keypos, 4000000000} opens and reports
// it). Such a table holds no object, as no tuple is that long. Where the
// key position fits an int it opens and refuses objects as bad; where it
// does not (32-bit platforms), the open is refused as not supported and
// the file is left as it was, instead of a negative key position.
func TestOpenHugeKeyPos(t *testing.T) {
	var keyPos uint32 = 4_000_000_000
	path := tmpFile(t, "huge.dets")
	tab, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	img := readFileT(t, path)
	h := decodeHeader(img[:headerSize])
	h.keyPos = keyPos
	h.encode(img[:headerSize])
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []RepairMode{NoRepair, AutoRepair} {
		tab, err := Open(path, Options{Repair: mode})
		if uint64(keyPos) > math.MaxInt {
			if !errors.Is(err, ErrNotSupported) {
				t.Fatalf("%v: open: %v, want ErrNotSupported", mode, err)
			}
			if !bytes.Equal(readFileT(t, path), img) {
				t.Fatalf("%v: the refused file changed", mode)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: open: %v", mode, err)
		}
		info, err := tab.Info()
		if err != nil || uint64(info.KeyPos) != uint64(keyPos) {
			t.Fatalf("%v: Info: key position %d, %v; want %d", mode, info.KeyPos, err, keyPos)
		}
		if err := tab.Insert(tup(etf.Int(1), etf.Int(2))); !errors.Is(err, ErrBadObject) {
			t.Fatalf("%v: insert: %v, want ErrBadObject", mode, err)
		}
		if err := tab.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
