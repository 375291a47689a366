package dets

import (
	"path/filepath"

	"github.com/godets/godets/etf"
	"testing"
)

// TestOTP9LayoutConstants: the otp9 layout's constants are format.go's,
// which the shared code's slot arithmetic (entryOff, segment) relies on.
func TestOTP9LayoutConstants(t *testing.T) {
	l := layoutOf(OTP9)
	if l.tag != tagOTP9 || l.format() != OTP9 {
		t.Fatalf("layoutOf(OTP9) has tag %d, format %v", l.tag, l.format())
	}
	if 1<<l.segShift != slotsPerSeg || l.entrySize != slotEntrySize || int(l.entrySize) > len(Table{}.small) {
		t.Fatalf("segment of %d entries of %d bytes, format.go says %d of %d", 1<<l.segShift, l.entrySize, slotsPerSeg, slotEntrySize)
	}
	if l.byteLimit() != allocLimit || l.keysPerSlot != 1 || l.hashName() != "phash2" {
		t.Fatalf("otp9 layout %+v", l)
	}
}

// TestEntryOffMatchesSegments: every slot's entry offset, read through the
// layout, is the one the segment table gives (docs/format-otp9.md §5), on a
// table grown past several segments.
func TestEntryOffMatchesSegments(t *testing.T) {
	tab, err := Open(filepath.Join(t.TempDir(), "t.dets"), Options{})
	must(t, err)
	defer tab.Close()
	for i := range 2000 {
		must(t, tab.Insert(tup(etf.Int(i), etf.Int(i))))
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	if len(tab.segs) < 4 {
		t.Fatalf("only %d segments", len(tab.segs))
	}
	for slot := uint64(0); slot < tab.h.next; slot++ {
		want := tab.segs[slot/slotsPerSeg] + slotEntrySize*int64(slot%slotsPerSeg)
		if got := tab.entryOff(slot); got != want {
			t.Fatalf("entryOff(%d) = %d, want %d", slot, got, want)
		}
	}
}
