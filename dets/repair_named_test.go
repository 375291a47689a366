package dets

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// otp9BucketImage returns the bytes of a bucket holding obj alone, as a
// table writes it.
func otp9BucketImage(t *testing.T, obj etf.Term) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "img.dets")
	tab, err := Open(path, Options{})
	must(t, err)
	must(t, tab.Insert(obj))
	must(t, tab.Close())
	b := readFileT(t, path)
	for p := baseAddr; p+8 <= len(b); p += 16 {
		if be.Uint32(b[p+4:]) == statusActive {
			return b[p : p+int(be.Uint32(b[p:]))]
		}
	}
	t.Fatal("no bucket")
	return nil
}

// plantedImages writes a sound table of 500 objects whose freed block
// holds bucket images of {never_inserted, 1} at every alignment mod 16
// (a binary that held them was stored, then deleted).
func plantedImages(t *testing.T, path string) {
	t.Helper()
	img := otp9BucketImage(t, etf.Tuple{etf.Atom("never_inserted"), etf.Int(1)})
	var payload []byte // the image at every alignment mod 16
	for i := range 16 {
		payload = append(payload, make([]byte, 16+i)...)
		payload = append(payload, img...)
	}
	tab, err := Open(path, Options{})
	must(t, err)
	must(t, tab.Insert(etf.Tuple{etf.Atom("doc"), etf.Binary(payload)}))
	for i := range 500 {
		must(t, tab.Insert(etf.Tuple{etf.Int(i), etf.Int(i)}))
	}
	must(t, tab.Close())
	tab, err = Open(path, Options{})
	must(t, err)
	must(t, tab.Delete(etf.Atom("doc")))
	must(t, tab.Close())
}

// TestForceRepairKeepsOnlyNamedBuckets: the compaction of a sound file
// keeps only the buckets its slot table names, as OTP's does
// (docs/repair.md §9). The full scan kept the objects of a bucket image
// left in a freed block: an object that was never inserted.
func TestForceRepairKeepsOnlyNamedBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.dets")
	plantedImages(t, path)
	tab, err := Open(path, Options{ReadOnly: true})
	must(t, err)
	before, _ := tab.Info()
	must(t, tab.Check())
	must(t, tab.Close())
	tab, err = Open(path, Options{Repair: ForceRepair})
	must(t, err)
	after, _ := tab.Info()
	objs, _ := tab.Lookup(etf.Atom("never_inserted"))
	must(t, tab.Close())
	if after.Size != before.Size || len(objs) != 0 {
		t.Errorf("ForceRepair of a sound table: %d objects before, %d after; Lookup(never_inserted) = %v", before.Size, after.Size, objs)
	}
}

// TestRepairSoundFileKeepsOnlyNamedBuckets: dets.Repair of a sound file
// follows the same rule, with the scan on one goroutine or two (the
// second one's tally of named buckets must merge exactly). A dirty copy
// of the file still gets the full scan and keeps every live object.
func TestRepairSoundFileKeepsOnlyNamedBuckets(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.dets")
	plantedImages(t, orig)
	b := readFileT(t, orig)
	for _, split := range []bool{false, true} {
		path := filepath.Join(dir, "t.dets")
		must(t, os.WriteFile(path, b, 0o644))
		opts := withTuning(Options{}, func(tn *tuning) {
			if split {
				tn.parallelScanMin = 0
			}
		})
		st, err := Repair(path, opts, nil)
		must(t, err)
		tab, err := Open(path, Options{ReadOnly: true})
		must(t, err)
		objs, err := tab.Lookup(etf.Atom("never_inserted"))
		must(t, err)
		must(t, tab.Check())
		must(t, tab.Close())
		if st.Objects != 500 || st.ObjectsFound != 500 || st.ObjectsDropped != 0 || len(objs) != 0 {
			t.Errorf("split=%v: %+v, Lookup(never_inserted) = %v; want the 500 objects and nothing dropped", split, st, objs)
		}
	}
	dirty := filepath.Join(dir, "dirty.dets")
	d := append([]byte(nil), b...)
	be.PutUint32(d[offClosed:], notProperlyClosed)
	must(t, os.WriteFile(dirty, d, 0o644))
	st, err := Repair(dirty, Options{}, nil)
	must(t, err)
	tab, err := Open(dirty, Options{ReadOnly: true})
	must(t, err)
	for i := range 500 {
		if objs, err := tab.Lookup(etf.Int(i)); err != nil || len(objs) != 1 {
			t.Fatalf("dirty copy: key %d: %v, %v (stats %+v)", i, objs, err, st)
		}
	}
	must(t, tab.Close())
}

// TestRepairSoundFileDamagedSlotTable: a closed file whose slot table
// does not name exactly the buckets the header counts (an entry zeroed,
// a segment pointer zeroed, an entry's size changed) gets the full scan,
// as OTP's compaction falls back to a repair: no live object is lost to
// a slot table that is not right.
func TestRepairSoundFileDamagedSlotTable(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "orig.dets")
	tab, err := Open(orig, Options{})
	must(t, err)
	for i := range 2000 {
		must(t, tab.Insert(etf.Tuple{etf.Int(i), etf.Int(i)}))
	}
	must(t, tab.Close())
	b := readFileT(t, orig)
	im, err := NewImage(b)
	must(t, err)
	var named []SlotEntry
	im.slots(func(e SlotEntry) {
		if e.Size != 0 {
			named = append(named, e)
		}
	})
	segs := im.Segments()
	if len(named) < 2 || len(segs) < 2 {
		t.Fatalf("%d named buckets, %d segments: the test proves less", len(named), len(segs))
	}
	damage := map[string]func(d []byte){
		"entry zeroed":   func(d []byte) { clear(d[named[0].At : named[0].At+8]) },
		"segment zeroed": func(d []byte) { be.PutUint32(d[segs[1].At:], 0) },
		"size changed":   func(d []byte) { be.PutUint32(d[named[1].At:], uint32(named[1].Size+16)) },
	}
	for name, f := range damage {
		path := filepath.Join(dir, "t.dets")
		d := append([]byte(nil), b...)
		f(d)
		must(t, os.WriteFile(path, d, 0o644))
		st, err := Repair(path, Options{}, nil)
		if err != nil || st.Objects != 2000 {
			t.Errorf("%s: %+v, %v; want the 2000 objects", name, st, err)
		}
	}
}
