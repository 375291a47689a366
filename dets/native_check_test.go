package dets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
)

// nativeCheckTable creates a closed native table of kind k with n keys
// (two objects a key for the bags) and returns its path.
func nativeCheckTable(t *testing.T, k Kind, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.dets")
	tab, err := Open(path, Options{Format: Native, Kind: k})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		objs := []etf.Term{etf.Tuple{etf.Int(i), etf.Binary(fmt.Sprintf("value-%d", i))}}
		if k != Set {
			objs = append(objs, etf.Tuple{etf.Int(i), etf.Binary(fmt.Sprintf("second-%d", i))})
		}
		if err := tab.Insert(objs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// nativeObjectAt returns the offset of the first object record of key's
// bucket in the closed native table at path, and of the record after it.
func nativeObjectAt(t *testing.T, path string, key int64) (first, second int64) {
	t.Helper()
	tab, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	kenc, err := etf.Encode(etf.Int(key))
	if err != nil {
		t.Fatal(err)
	}
	slot := tab.slotFor(nativeKeyHash(kenc[1:]))
	e, err := tab.entry(slot)
	if err != nil || e.size == 0 {
		t.Fatalf("slot %d of key %d: %v %v", slot, key, e, err)
	}
	b := make([]byte, e.size)
	if err := tab.readAt(b, e.ptr); err != nil {
		t.Fatal(err)
	}
	var recs []int64
	if _, err := walkNativeBucket(path, b, e.ptr, uint64(e.size), 1, func(off int64, enc, k []byte) error {
		if string(k) == string(kenc[1:]) {
			recs = append(recs, off)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatalf("key %d not in its bucket", key)
	}
	recs = append(recs, 0)
	return recs[0], recs[1]
}

func checkReportOf(t *testing.T, path string) CheckReport {
	t.Helper()
	tab, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	r, err := tab.CheckReport()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestNativeCheckSound: a sound native table, clean or in the middle of
// an epoch, passes every native rule; the report counts its objects and
// states both metas.
func TestNativeCheckSound(t *testing.T) {
	for _, k := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(k.String(), func(t *testing.T) {
			path := nativeCheckTable(t, k, 300)
			r := checkReportOf(t, path)
			if err := r.Err(); err != nil {
				t.Fatalf("Check of a sound table: %v", err)
			}
			want := int64(300)
			if k != Set {
				want = 600
			}
			if r.Objects != want || len(r.Metas) != 2 {
				t.Fatalf("report: %d objects, metas %v; want %d objects, 2 metas", r.Objects, r.Metas, want)
			}
			cur := 0
			for _, m := range r.Metas {
				if m.Current {
					cur++
					if !m.Valid || m.Gen < 2 {
						t.Fatalf("current meta %+v", m)
					}
				}
			}
			if cur != 1 {
				t.Fatalf("metas %+v: want one current", r.Metas)
			}
			// Writes of an open epoch: the overlay, the log and pending cells.
			tab, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer tab.Close()
			for i := range 100 {
				if err := tab.Insert(etf.Tuple{etf.Int(1000 + i), etf.Binary("x")}); err != nil {
					t.Fatal(err)
				}
				if err := tab.Delete(etf.Int(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tab.Check(); err != nil {
				t.Fatalf("Check in an epoch: %v", err)
			}
			if err := tab.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := tab.Check(); err != nil {
				t.Fatalf("Check after Sync: %v", err)
			}
		})
	}
}

// TestNativeCheckNamesDamage: a flipped byte inside one object's ETF fails
// that record's checksum; Check names that object, its slot and its key
// (unverified), counts every other object as sound, and leaves the file
// byte-identical.
func TestNativeCheckNamesDamage(t *testing.T) {
	path := nativeCheckTable(t, Bag, 200)
	first, second := nativeObjectAt(t, path, 77)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[second-2] ^= 0x20 // the last bytes of the first record's value
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := checkReportOf(t, path)
	if len(r.Damaged) != 1 || r.DamagedCount != 1 || r.DamagedBuckets != 1 {
		t.Fatalf("damaged %+v (count %d, buckets %d), want exactly the object at %d", r.Damaged, r.DamagedCount, r.DamagedBuckets, first)
	}
	d := r.Damaged[0]
	if d.Offset != first || d.Reason != "checksum mismatch" || !d.KeyOK || d.Verified() || !etf.Equal(d.Key, etf.Int(77)) {
		t.Fatalf("damaged object %+v, want offset %d, key 77 unverified", d, first)
	}
	if r.Objects != 399 {
		t.Fatalf("%d sound objects, want 399", r.Objects)
	}
	err = r.Err()
	var ce *CorruptionError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &ce) || ce.Offset != first {
		t.Fatalf("Err() = %v, want a *CorruptionError at %d", err, first)
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(b) {
		t.Fatalf("Check changed the file (%v)", err)
	}
}

// TestNativeCheckLostFraming: a damaged length word that runs past the
// bucket and over the ETF's version byte; Check resyncs to the next record,
// names this one with "key unreadable" semantics (KeyOK false) and counts
// the rest as sound.
func TestNativeCheckLostFraming(t *testing.T) {
	path := nativeCheckTable(t, Set, 100)
	first, _ := nativeObjectAt(t, path, 5)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[first+8] = 0xff // the uvarint length: now runs past its bucket
	b[first+9] = 0x7f
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r := checkReportOf(t, path)
	if r.DamagedCount < 1 || r.Damaged[0].Offset != first || r.Damaged[0].KeyOK {
		t.Fatalf("damaged %+v, want the object at %d with its key unreadable", r.Damaged, first)
	}
	if r.DamagedCount != 1 || r.Objects != 99 {
		t.Fatalf("%d sound and %d damaged objects of 100", r.Objects, r.DamagedCount)
	}
}

// TestNativeCheckStructure: damage outside objects (a segment's bytes, the
// free record, the fallback meta's order) is a problem, not a damaged
// object, and each is found.
func TestNativeCheckStructure(t *testing.T) {
	cases := map[string]func(tab *Table, b []byte){
		"segment": func(tab *Table, b []byte) {
			must(t, tab.nativeLoadPart(0)) // parts are read at first use
			b[tab.nat.segs[0].off+16] ^= 1
		},
		"free record": func(tab *Table, b []byte) {
			b[tab.nat.meta.freeOff+16] ^= 1
		},
		"bucket header": func(tab *Table, b []byte) {
			for slot := range tab.h.next {
				if e, _ := tab.entry(slot); e.size != 0 {
					b[e.ptr+8] ^= 1 // the seq, under hxh
					return
				}
			}
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := nativeCheckTable(t, Set, 100)
			tab, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			damage(tab, b)
			tab.Close()
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			tab, err = Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer tab.Close()
			r, err := tab.CheckReport()
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Problems) == 0 || !errors.Is(r.Err(), ErrCorrupt) {
				t.Fatalf("no problem found: %+v", r)
			}
			t.Log(r.Problems[0])
		})
	}
}

// TestNativeCheckTilingLeak: a cell that no bucket uses and the free
// record does not list is counted as leaked, not damage; a cell that two
// slots name is a layout problem.
func TestNativeCheckTilingLeak(t *testing.T) {
	path := nativeCheckTable(t, Set, 50)
	tab, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Close()
	r, err := tab.CheckReport()
	if err != nil || r.Err() != nil || r.LeakedBytes != 0 {
		t.Fatalf("sound table: leaked %d, %v %v", r.LeakedBytes, err, r.Err())
	}
	// Change slot entries in memory only (the table is read-only): drop
	// one, so that its cell is named by nothing, and point another at
	// the cell of a third.
	var full []uint64
	for slot := range tab.h.next {
		if e, _ := tab.entry(slot); e.size != 0 {
			full = append(full, slot)
		}
	}
	if len(full) < 3 {
		t.Fatalf("%d buckets", len(full))
	}
	word := func(slot uint64) *slotWord {
		seg, err := tab.segment(slot / slotsPerSeg)
		if err != nil {
			t.Fatal(err)
		}
		return &seg[slot%slotsPerSeg]
	}
	e0, _ := tab.entry(full[0])
	*word(full[0]) = 0
	r, err = tab.CheckReport()
	if err != nil {
		t.Fatal(err)
	}
	if r.LeakedBytes != uint64(e0.size) {
		t.Fatalf("leaked %d bytes, want the dropped cell's %d (problems %v)", r.LeakedBytes, e0.size, r.Problems)
	}
	*word(full[1]) = *word(full[2])
	r, err = tab.CheckReport()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range r.Problems {
		var ce *CorruptionError
		if errors.As(p, &ce) && ce.Section == "layout" {
			found = true
		}
	}
	if !found {
		t.Fatalf("a cell named twice was not found: %v", r.Problems)
	}
}

// TestKeyOfRawGarbage: the key of a damaged record is decoded from bytes
// that failed their checksum, so any bytes must give a key or none, never
// a panic. Seeded; damaged copies of real objects and random bytes.
func TestKeyOfRawGarbage(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	base, err := etf.Encode(etf.Tuple{etf.Binary("user:42"), etf.List{etf.Int(1), etf.Float(2.5)}, etf.Atom("x")})
	if err != nil {
		t.Fatal(err)
	}
	for range 20000 {
		b := append([]byte(nil), base...)
		for range 1 + rng.Intn(4) {
			b[rng.Intn(len(b))] = byte(rng.Intn(256))
		}
		if rng.Intn(4) == 0 {
			b = b[:rng.Intn(len(b)+1)]
		}
		if rng.Intn(8) == 0 {
			b = append([]byte{131}, make([]byte, rng.Intn(40))...)
			rng.Read(b[1:])
		}
		keyOfRaw(b, 1+rng.Intn(3))
	}
}

// TestNativeFreeRecordNoLeak: no checkpoint leaks space. A free record of
// exactly half its block used to keep the block whole while its freeLen
// named the lower half, so the next checkpoint freed only that and Check
// counted the upper half in LeakedBytes from then on; seed
// 1796227755288826883 (TestNativeModel's workload, bag) met it at its
// first Close. The test runs that seed and the test's own.
func TestNativeFreeRecordNoLeak(t *testing.T) {
	for _, seed := range []int64{1796227755288826883, testSeed(t)} {
		for _, kind := range []Kind{Set, Bag, DuplicateBag} {
			rng := rand.New(rand.NewSource(seed))
			path := tmpFile(t, "leak.dets")
			opts := Options{Kind: kind, Format: Native}
			tab := openT(t, path, opts)
			const keys = 3000
			noLeak := func(when string, round int) {
				t.Helper()
				r, err := tab.CheckReport()
				must(t, err)
				if r.LeakedBytes != 0 || r.Err() != nil {
					t.Fatalf("seed %d, %s, round %d, %s: %d bytes leaked (%v)", seed, kind, round, when, r.LeakedBytes, r.Err())
				}
			}
			for round := range 6 {
				for range 2000 {
					key := rng.Int63n(keys)
					switch r := rng.Intn(10); {
					case r < 7:
						size := rng.Intn(40)
						if rng.Intn(100) == 0 {
							size = 2000 + rng.Intn(6000)
						}
						must(t, tab.Insert(etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(make([]byte, size))}))
					case r < 9:
						must(t, tab.Delete(etf.Int(key)))
					default:
						// TestNativeModel deletes one object of the key
						// here; the draw keeps the same random stream.
						objs, err := tab.Lookup(etf.Int(key))
						must(t, err)
						if len(objs) == 0 {
							continue
						}
						must(t, tab.DeleteObject(objs[rng.Intn(len(objs))]))
					}
				}
				if round%3 == 0 {
					must(t, tab.Sync())
				} else {
					must(t, tab.Close())
					tab = openT(t, path, opts)
				}
				noLeak("after the checkpoint", round)
			}
			must(t, tab.Close())
		}
	}
}

// TestCheckDamagedLengthResyncs: a bit flip in a record's uvarint length
// fails that record alone. Check must resync past it as repair does, so
// that both agree on the damage: exactly the flipped record, at its
// offset and with its key (unverified), every other record sound, and no
// damage reported where no record starts. Each case runs Repair on a copy
// of the same file and holds Check to its counts and to the key it drops.
func TestCheckDamagedLengthResyncs(t *testing.T) {
	const keys = 200
	flips := []struct {
		name string
		bit  byte
	}{
		{"shorter", 0x10}, // still minimal, still inside the bucket
		{"low bit", 0x01},
		{"longer", 0x20},
		{"past the bucket", 0x80}, // a continuation bit: the length runs on into the ETF
	}
	for _, k := range []Kind{Set, Bag, DuplicateBag} {
		path := nativeCheckTable(t, k, keys)
		orig := readFileT(t, path)
		total, per := int64(keys), 1
		if k != Set {
			total, per = 2*keys, 2
		}
		for _, key := range []int64{0, 77, keys - 1} {
			first, second := nativeObjectAt(t, path, key)
			recs := []int64{first}
			if k != Set {
				recs = append(recs, second) // the key's second object
			}
			for ri, rec := range recs {
				for _, f := range flips {
					t.Run(fmt.Sprintf("%s/key%d/rec%d/%s", k, key, ri, f.name), func(t *testing.T) {
						dir := t.TempDir()
						damaged := filepath.Join(dir, "check.dets")
						b := append([]byte(nil), orig...)
						b[rec+8] ^= f.bit
						must(t, os.WriteFile(damaged, b, 0o644))
						copyPath := filepath.Join(dir, "repair.dets")
						must(t, os.WriteFile(copyPath, b, 0o644))

						r := checkReportOf(t, damaged)
						st, err := Repair(copyPath, Options{}, nil)
						must(t, err)
						if st.ObjectsDropped != 1 || st.ObjectsFound != total-1 {
							t.Fatalf("Repair: found %d, dropped %d; want %d and 1", st.ObjectsFound, st.ObjectsDropped, total-1)
						}
						if r.DamagedCount != st.ObjectsDropped || r.Objects != st.ObjectsFound || len(r.Damaged) != 1 {
							t.Fatalf("Check: %d damaged %+v, %d sound; Repair dropped %d, found %d", r.DamagedCount, r.Damaged, r.Objects, st.ObjectsDropped, st.ObjectsFound)
						}
						d := r.Damaged[0]
						if d.Offset != rec || !d.KeyOK || d.Verified() || !etf.Equal(d.Key, etf.Int(key)) {
							t.Fatalf("damaged %+v; want the record at %d, key %d unverified", d, rec, key)
						}
						// Repair dropped an object of that same key.
						tab, err := Open(copyPath, Options{ReadOnly: true})
						must(t, err)
						defer tab.Close()
						objs, err := tab.Lookup(etf.Int(key))
						must(t, err)
						if len(objs) != per-1 {
							t.Fatalf("repaired key %d holds %d objects, want %d", key, len(objs), per-1)
						}
					})
				}
			}
		}
	}
}

// TestCheckDamagedChainNamesEach: two adjacent records whose values are
// damaged keep their lengths; Check names both, each at its own offset
// with its key, as repair drops both.
func TestCheckDamagedChainNamesEach(t *testing.T) {
	path := nativeCheckTable(t, Bag, 200)
	first, second := nativeObjectAt(t, path, 77)
	b := readFileT(t, path)
	l, v := binary.Uvarint(b[second+8:])
	end := second + 8 + int64(v) + int64(l)
	b[second-2] ^= 0x20 // the last bytes of each record's value
	b[end-2] ^= 0x20
	must(t, os.WriteFile(path, b, 0o644))
	copyPath := filepath.Join(t.TempDir(), "repair.dets")
	must(t, os.WriteFile(copyPath, b, 0o644))
	r := checkReportOf(t, path)
	st, err := Repair(copyPath, Options{}, nil)
	must(t, err)
	if st.ObjectsDropped != 2 || r.DamagedCount != 2 || r.Objects != st.ObjectsFound || len(r.Damaged) != 2 {
		t.Fatalf("Check: %d damaged %+v, %d sound; Repair dropped %d, found %d", r.DamagedCount, r.Damaged, r.Objects, st.ObjectsDropped, st.ObjectsFound)
	}
	for i, at := range []int64{first, second} {
		d := r.Damaged[i]
		if d.Offset != at || d.Reason != reasonChecksum || !d.KeyOK || d.Verified() || !etf.Equal(d.Key, etf.Int(77)) {
			t.Fatalf("damaged %+v; want the record at %d, key 77 unverified", d, at)
		}
	}
}
