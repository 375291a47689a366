package dets

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// TestNativeRecoverDamagedGrownPart: an epoch whose growth appended a
// segment to a part on disk that nothing else in the epoch read leaves
// that part to be read first by the recovery's checkpoint, which encodes
// the part anew from all its children. When the part fails its checksum,
// the AutoRepair open gives way to the full repair (§11.3), which keeps
// every object, instead of failing with the part's CorruptionError.
func TestNativeRecoverDamagedGrownPart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.dets")
	tab := openT(t, path, Options{Format: Native, MinSlots: nativeSlotsPerPart})
	const n = 3000
	m := newModel(Set)
	for i := range n {
		obj := tup(etf.Int(int64(i)), bin("v"))
		must(t, tab.Insert(obj))
		m.Insert(obj)
	}
	// The step is called directly: reaching it through the load rule
	// takes 2^18 keys.
	nativeGrowStep(t, tab) // a second part, of one segment
	must(t, tab.Close())

	tab = openT(t, path, Options{})
	nativeGrowStep(t, tab) // splits segment 1 (part 0) and appends segment 257 to part 1, unread
	if tab.nat.segs[nativeSegsPerPart].off != 0 {
		t.Fatal("the step read part 1; the test needs it unread")
	}
	killed := filepath.Join(dir, "killed.dets")
	img := readFileT(t, path)
	must(t, tab.Close())

	meta := nativeCurrentMeta(t, img)
	if meta.next != nativeSlotsPerPart+nativeSlotsPerSeg {
		t.Fatalf("the killed file's meta has %d slots", meta.next)
	}
	part1 := le.Uint64(img[meta.rootOff+16:])
	img[part1+20] ^= 1
	must(t, os.WriteFile(killed, img, 0o644))

	if _, err := Open(killed, Options{}); err == nil {
		t.Fatal("NoRepair open of a file not closed properly succeeded")
	}
	if got := readFileT(t, killed); !bytes.Equal(got, img) {
		t.Fatal("the NoRepair open changed the file")
	}
	rec, err := Open(killed, Options{Repair: AutoRepair})
	if err != nil {
		t.Fatalf("AutoRepair with a damaged part under a grown segment: %v, want the full repair", err)
	}
	defer rec.Close()
	if st, ok, _ := rec.Recovery(); ok {
		t.Fatalf("Recovery() = %+v: a recovery, want the full repair", st)
	}
	checkModel(t, rec, m, n)
	must(t, rec.Check())
}
