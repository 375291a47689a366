package dets

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godets/godets/etf"
)

// nativeTestImage is an empty native table of the given kind, as create
// will write it.
func nativeTestImage(t testing.TB, kind Kind) []byte {
	t.Helper()
	s := newNativeSuper(kind, 1, nativeDefaultMinSlots, nativeDefaultMaxSlots, 0x5eed0000+uint64(kind))
	img, _, err := nativeEmptyImage(&s)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestNativeEmptyImage reads back every structure of a new empty table.
func TestNativeEmptyImage(t *testing.T) {
	for _, minSlots := range []uint64{512, 1 << 17, 1<<17 + 512<<1} {
		s := newNativeSuper(Bag, 2, pow2u64(minSlots), nativeDefaultMaxSlots, 7)
		img, m, err := nativeEmptyImage(&s)
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(img))
		if minSlots == 512 && size != 36864 {
			t.Errorf("empty table of 512 slots is %d bytes, the design says 36,864", size)
		}
		sb, err := decodeNativeSuper("f", img, size)
		if err != nil || sb != s {
			t.Fatalf("superblock: %v", err)
		}
		ma, errA := decodeNativeMeta("f", img[nativeMetaAOff:], nativeMetaAOff, &sb, size)
		mb, errB := decodeNativeMeta("f", img[nativeMetaBOff:], nativeMetaBOff, &sb, size)
		cur, page, fallback, ok := chooseNativeMeta(ma, errA, mb, errB)
		if !ok || page != nativeMetaAOff || fallback || cur != m || cur.dataEnd != uint64(size) {
			t.Fatalf("metas: %v / %v, current %+v", errA, errB, cur)
		}
		parts, err := decodeNativeRoot("f", img[m.rootOff:m.rootOff+m.rootLen], &m, sb.base, nil)
		if err != nil {
			t.Fatal(err)
		}
		segs := 0
		for p, pc := range parts {
			var pd [nativeSegsPerPart]nativeChild
			used := nativeSegsInPart(m.next, uint64(p))
			if err := decodeNativePart("f", img[pc.off:pc.off+nativePageSize], int64(pc.off), pc.sum, used, sb.base, m.dataEnd, &pd); err != nil {
				t.Fatal(err)
			}
			for _, sc := range pd[:used] {
				var sd [nativeSlotsPerSeg]nativeEntry
				if err := decodeNativeSegment("f", img[sc.off:sc.off+nativePageSize], int64(sc.off), sc.sum, sb.base, m.dataEnd, &sd); err != nil {
					t.Fatal(err)
				}
				if sd != [nativeSlotsPerSeg]nativeEntry{} {
					t.Fatal("an empty table's segment has entries")
				}
				segs++
			}
		}
		if uint64(segs) != m.next/nativeSlotsPerSeg {
			t.Fatalf("%d segments for %d slots", segs, m.next)
		}
		a, err := decodeNativeFree("f", img[m.freeOff:m.freeOff+m.freeLen], int64(m.freeOff), m.freeSum, sb.base, m.dataEnd)
		if err != nil {
			t.Fatal(err)
		}
		if a.dataEnd() != m.dataEnd {
			t.Fatalf("allocator ends at %d, meta at %d", a.dataEnd(), m.dataEnd)
		}
		// Closed properly: the first record of the epoch's log head fails.
		head := nativeLogHead(m.gen) + nativeLogHeader
		if _, err := decodeNativeLogRec("f", img[head:], int64(head)); err == nil {
			t.Fatal("a new table's log head holds a record")
		}
	}
}

func pow2u64(v uint64) uint64 {
	p := uint64(1)
	for p < v {
		p <<= 1
	}
	return p
}

// TestNativeOpenClean: a native file closed properly opens in every
// access mode without repair, and an open that writes nothing leaves it
// byte-identical. A forced repair rebuilds it read-write and is refused
// read-only, with a typed error and the file unchanged.
func TestNativeOpenClean(t *testing.T) {
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		img := nativeTestImage(t, kind)
		path := filepath.Join(t.TempDir(), "n.dets")
		must(t, os.WriteFile(path, img, 0o644))
		for _, ro := range []bool{false, true} {
			for _, mode := range []RepairMode{NoRepair, AutoRepair} {
				tab, err := Open(path, Options{ReadOnly: ro, Repair: mode})
				if err != nil {
					t.Fatalf("%s ro=%v %s: %v", kind, ro, mode, err)
				}
				info, err := tab.Info()
				must(t, err)
				if info.Kind != kind || info.Format != Native || info.Size != 0 || !info.Clean {
					t.Fatalf("%s ro=%v %s: Info %+v", kind, ro, mode, info)
				}
				if objs, err := tab.Lookup(etf.Int(1)); err != nil || objs != nil {
					t.Fatalf("%s: Lookup on an empty table: %v %v", kind, objs, err)
				}
				must(t, tab.Close())
			}
			if ro {
				_, err := Open(path, Options{ReadOnly: ro, Repair: ForceRepair})
				if !errors.Is(err, ErrReadOnly) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("%s read-only forced repair: %v, want ErrReadOnly", kind, err)
				}
				continue
			}
			// A forced repair rebuilds (a copy, so that the original
			// stays byte-identical for the check below).
			cp := filepath.Join(t.TempDir(), "f.dets")
			must(t, os.WriteFile(cp, img, 0o644))
			tab, err := Open(cp, Options{Repair: ForceRepair})
			must(t, err)
			if info, err := tab.Info(); err != nil || info.Kind != kind || info.Format != Native || info.Size != 0 {
				t.Fatalf("%s forced repair: %+v, %v", kind, info, err)
			}
			must(t, tab.Close())
		}
		if !bytes.Equal(readFileT(t, path), img) {
			t.Fatalf("%s: an open without writes changed the file", kind)
		}
	}
}

// TestNativeOpenDamagedSuper: a NAT1 file whose superblock fails gets the
// verdict of §4.1, and stays byte-identical.
func TestNativeOpenDamagedSuper(t *testing.T) {
	img := nativeTestImage(t, Set)
	resealed := func(edit func(b []byte)) []byte {
		b := bytes.Clone(img)
		edit(b)
		return reseal(b, nsOffSum, 0, nsOffSum)
	}
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"short", img[:nativeBase-1], ErrNotDETS},
		{"version word only", img[:20], ErrNotDETS},
		{"checksum", func() []byte { b := bytes.Clone(img); b[nsOffFileID] ^= 1; return b }(), ErrNotDETS},
		{"revision 3", resealed(func(b []byte) { b[nsOffRevision] = 3 }), ErrUnsupportedVersion},
		{"kind 5", resealed(func(b []byte) { b[nsOffKind] = 5 }), ErrBadTypeCode},
		{"key hash 3", resealed(func(b []byte) { b[nsOffKeyHash] = 3 }), ErrBadHashMethod},
		{"key position 0", resealed(func(b []byte) { b[nsOffKeyPos] = 0 }), ErrCorrupt},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "n.dets")
		must(t, os.WriteFile(path, c.data, 0o644))
		for _, mode := range []RepairMode{NoRepair, ForceRepair} {
			tab, err := Open(path, Options{Repair: mode})
			if err == nil {
				tab.Close()
				t.Fatalf("%s: opened", c.name)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("%s %s: %v, want %v", c.name, mode, err, c.want)
			}
		}
		if !bytes.Equal(readFileT(t, path), c.data) {
			t.Fatalf("%s: a refused open changed the file", c.name)
		}
	}
	path := filepath.Join(t.TempDir(), "n.dets")
	must(t, os.WriteFile(path, cases[3].data, 0o644))
	_, err := Open(path, Options{})
	var re *NativeRevisionError
	if !errors.As(err, &re) || re.Revision != 3 || re.Path != path {
		t.Fatalf("revision 3: %v", err)
	}
}

// TestNativeRepairIgnoresOTP9Bytes: Repair rebuilds a native file as
// native, never as otp9. The image carries, past its data end, the bytes
// of an otp9 table (as a conversion could leave in free space): an otp9
// scan would find its objects; the native repair finds none of them.
func TestNativeRepairIgnoresOTP9Bytes(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "o.dets")
	tab := mustOpen(t, old, Options{})
	for i := range 20 {
		must(t, tab.Insert(tup(etf.Int(i), bin("stale"))))
	}
	must(t, tab.Close())
	img := append(nativeTestImage(t, Set), readFileT(t, old)...)
	path := filepath.Join(dir, "n.dets")
	for _, opts := range []Options{{Kind: Set, KeyPos: 1}, {}} {
		must(t, os.WriteFile(path, img, 0o644))
		st, err := Repair(path, opts, nil)
		if err != nil || st.Objects != 0 || st.ObjectsFound != 0 {
			t.Fatalf("Repair (kind %s): %+v, %v; want an empty native table", opts.Kind, st, err)
		}
		tab := mustOpen(t, path, Options{Format: Native, Repair: NoRepair})
		if info, err := tab.Info(); err != nil || info.Format != Native || info.Size != 0 {
			t.Fatalf("repaired table: %+v, %v", info, err)
		}
		must(t, tab.Close())
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "n.dets.*")); len(names) != 0 {
		t.Fatalf("files left: %v", names)
	}
}

// TestNativeDamagedFreeRecordAtOpen: a clean native file whose free record
// fails its checksum is a repair decision at a writable open, as a
// malformed otp9 free list is: NoRepair refuses it unchanged, a read-only
// open (which never parses the record) reads it, and AutoRepair rebuilds
// it and takes writes. It used to open, and then every write failed with
// ErrCorrupt while AutoRepair never repaired it.
func TestNativeDamagedFreeRecordAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.dets")
	tab := mustOpen(t, path, Options{Format: Native})
	for i := range 500 {
		must(t, tab.Insert(tup(etf.Int(i), bin("v"))))
	}
	for i := range 200 {
		must(t, tab.Delete(etf.Int(i)))
	}
	must(t, tab.Close())
	tab = mustOpen(t, path, Options{ReadOnly: true})
	freeOff := int64(tab.nat.meta.freeOff)
	must(t, tab.Close())
	b := readFileT(t, path)
	b[freeOff+1] ^= 0x40
	must(t, os.WriteFile(path, b, 0o644))

	if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NoRepair: %v, want ErrNeedsRepair naming the free record", err)
	}
	if !bytes.Equal(readFileT(t, path), b) {
		t.Fatal("a refused open changed the file")
	}
	tab = mustOpen(t, path, Options{ReadOnly: true})
	if objs, err := tab.Lookup(etf.Int(300)); err != nil || len(objs) != 1 {
		t.Fatalf("read-only lookup: %v %v", objs, err)
	}
	must(t, tab.Close())
	tab = openT(t, path, Options{Repair: AutoRepair})
	must(t, tab.Insert(tup(etf.Int(1000), bin("w"))))
	if info, err := tab.Info(); err != nil || info.Size != 301 {
		t.Fatalf("after AutoRepair and an insert: %d objects (%v), want 301", info.Size, err)
	}
}
