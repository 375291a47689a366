package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/godets/godets/etf"
	mdl "github.com/godets/godets/internal/model"
)

// forEachFormat runs f once per file format, as a subtest named after it
// (docs/format-native.md §15.2). Tests whose point is otp9's bytes or
// OTP itself do not use it.
func forEachFormat(t *testing.T, f func(t *testing.T, format Format)) {
	for _, format := range []Format{OTP9, Native} {
		t.Run(format.String(), func(t *testing.T) { f(t, format) })
	}
}

// checkModel compares every key of the model (and a few absent ones) with
// tab, and the counts.
func checkModel(t *testing.T, tab *Table, m *mdl.Model, keys int64) {
	t.Helper()
	objects := 0
	for key := range keys {
		got, err := tab.Lookup(etf.Int(key))
		if err != nil {
			t.Fatalf("Lookup(%d): %v", key, err)
		}
		want := m.Lookup(etf.Int(key))
		objects += len(want)
		if len(got) != len(want) {
			t.Fatalf("Lookup(%d): %d objects %v, want %d %v", key, len(got), got, len(want), want)
		}
		for i := range got {
			if etf.CompareExact(got[i], want[i]) != 0 {
				t.Fatalf("Lookup(%d)[%d] = %v, want %v", key, i, got[i], want[i])
			}
		}
	}
	info, err := tab.Info()
	if err != nil {
		t.Fatal(err)
	}
	nkeys := 0
	for objs := range m.ByKey() {
		if len(objs) > 0 {
			nkeys++
		}
	}
	if info.Size != objects || info.NoKeys != nkeys {
		t.Fatalf("Info: %d objects %d keys, want %d and %d", info.Size, info.NoKeys, objects, nkeys)
	}
}

// TestNativeModel runs random inserts and deletes on a native table of
// each kind against a model, with Sync, Close and reopen in between. With
// up to 3000 keys the table grows past its 512 slots (TestNativeGrowModel
// checks the load rule), and some buckets outgrow the largest cell.
func TestNativeModel(t *testing.T) {
	seed := testSeed(t)
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			path := tmpFile(t, "model.dets")
			opts := Options{Kind: kind, Format: Native}
			tab := openT(t, path, opts)
			m := newModel(kind)
			const keys = 3000
			for round := range 6 {
				for range 2000 {
					key := rng.Int63n(keys)
					switch r := rng.Intn(10); {
					case r < 7:
						size := rng.Intn(40)
						if rng.Intn(100) == 0 { // buckets past the largest cell, in buddy blocks
							size = 2000 + rng.Intn(6000)
						}
						obj := etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(make([]byte, size))}
						must(t, tab.Insert(obj))
						m.Insert(obj)
					case r < 9:
						must(t, tab.Delete(etf.Int(key)))
						m.Delete(etf.Int(key))
					default:
						objs := m.Lookup(etf.Int(key))
						if len(objs) == 0 {
							continue
						}
						obj := objs[rng.Intn(len(objs))]
						must(t, tab.DeleteObject(obj))
						m.DeleteObject(obj)
					}
				}
				checkModel(t, tab, m, keys)
				switch round % 3 {
				case 0:
					must(t, tab.Sync())
				case 1:
					must(t, tab.Close())
					tab = openT(t, path, Options{})
				case 2:
					must(t, tab.Close())
					tab = openT(t, path, Options{Format: Native, ReadOnly: true})
					checkModel(t, tab, m, keys)
					must(t, tab.Close())
					tab = openT(t, path, opts)
				}
				checkModel(t, tab, m, keys)
			}
			info, err := tab.Info()
			must(t, err)
			if info.Format != Native || info.NoSlots.Next <= nativeDefaultMinSlots {
				t.Errorf("Info: format %v, %d slots; want native, grown past %d", info.Format, info.NoSlots.Next, nativeDefaultMinSlots)
			}
			must(t, tab.Check())
			must(t, tab.Close())
		})
	}
}

// TestNativeLogRecords checks the log a write session leaves behind, as
// recovery (step 6) will read it: one PUT or EMPTY record a bucket write,
// chained through LINKs past the head page, and a file that is "not
// closed properly" until the checkpoint (§11.1).
func TestNativeLogRecords(t *testing.T) {
	path := tmpFile(t, "log.dets")
	tab := openT(t, path, Options{Format: Native})
	const n = 200 // past the head page's 63 records and into a log block
	for i := range n {
		must(t, tab.Insert(tup(etf.Int(i), bin("v"))))
	}
	must(t, tab.Delete(etf.Int(0)))
	nat := tab.nat
	data := readFileT(t, path)
	lg := imageLog(t, path, data, nat)
	if len(lg.recs) != n+1 || len(lg.blocks) != len(nat.logBlocks) || len(lg.blocks) == 0 {
		t.Fatalf("log: %d records in %d blocks, want %d in %d", len(lg.recs), len(lg.blocks), n+1, len(nat.logBlocks))
	}
	for i, r := range lg.recs[:n] {
		if r.typ != recPut || !r.endsGroup() || r.dObj != 1 || r.dKeys != 1 {
			t.Fatalf("record %d: %+v, want a PUT of one new object", i, r)
		}
		e := nativeEntry(r.entry)
		if reusedLater(lg.recs, i) {
			continue // its cell holds a later bucket now (§7.3)
		}
		if _, err := verifyNativeBucketAt(path, data, &r, e); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	// The slot of key 0 held only it: its delete is an EMPTY (512 slots, 200 keys
	// leave most slots with one key, and key 0's neighbours are checked here).
	if last := lg.recs[n]; last.typ == recEmpty && (last.dObj != -1 || last.dKeys != -1) {
		t.Fatalf("last record %+v", last)
	}
	// While the log has records, the file is not closed properly.
	cp := path + ".copy"
	must(t, os.WriteFile(cp, data, 0o644))
	if _, err := Open(cp, Options{ReadOnly: true, Repair: NoRepair}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("open during the session: %v, want ErrNeedsRepair", err)
	}
	must(t, tab.Close())
	tab = openT(t, path, Options{Repair: NoRepair})
	if objs, err := tab.Lookup(etf.Int(0)); err != nil || objs != nil {
		t.Fatalf("Lookup(0) after delete: %v %v", objs, err)
	}
	must(t, tab.Close())
}

// verifyNativeBucketAt checks the bucket a PUT names in the file's bytes.
func verifyNativeBucketAt(path string, data []byte, r *nativeLogRec, e nativeEntry) (nativeBucketHead, error) {
	off, room := e.off(), e.room()
	if room == 0 || off+room > uint64(len(data)) {
		return nativeBucketHead{}, fmt.Errorf("entry %v outside the file", e)
	}
	h, err := walkNativeBucket(path, data[off:off+room], int64(off), room, 1, nil)
	if err != nil {
		return h, err
	}
	if h.seq != r.seq || uint64(h.slot) != r.slot || nativeBucketSum(nativeRevision, data[off:off+h.size]) != r.bsum {
		return h, fmt.Errorf("bucket %+v does not match its record %+v", h, r)
	}
	return h, nil
}

// TestNativeOpenDecisions is §11.5's table for the rows step 4 builds.
func TestNativeOpenDecisions(t *testing.T) {
	dir := t.TempDir()
	otp := dir + "/otp9.dets"
	tab := openT(t, otp, Options{})
	must(t, tab.Close())
	before := fileHash(t, otp)
	if _, err := Open(otp, Options{Format: Native}); !errors.Is(err, ErrFormatMismatch) {
		t.Errorf("otp9 file with Format Native: %v, want ErrFormatMismatch", err)
	}
	if fileHash(t, otp) != before {
		t.Error("refused otp9 file changed")
	}

	// A native file left by a killed writer: a copy taken mid-session.
	nat := dir + "/native.dets"
	tab = openT(t, nat, Options{Format: Native, Kind: Bag})
	must(t, tab.Insert(tup(etf.Int(1), bin("a"))))
	dirty := dir + "/dirty.dets"
	must(t, os.WriteFile(dirty, readFileT(t, nat), 0o644))
	must(t, tab.Close())
	dh := fileHash(t, dirty)
	for _, c := range []struct {
		opts Options
		want error
	}{
		{Options{Repair: NoRepair}, ErrNeedsRepair},
		{Options{ReadOnly: true, Repair: AutoRepair}, ErrNotClosed},
		{Options{ReadOnly: true, Repair: ForceRepair}, ErrNotClosed},
		// Read-write AutoRepair and ForceRepair recover: TestNativeRecover.
	} {
		if _, err := Open(dirty, c.opts); !errors.Is(err, c.want) {
			t.Errorf("dirty native file, %+v: %v, want %v", c.opts, err, c.want)
		}
		if fileHash(t, dirty) != dh {
			t.Fatalf("dirty native file, %+v: file changed", c.opts)
		}
	}
	// Both metas invalid (meta B of a new file is zero; A gets a flipped
	// bit), or the root failing its checksum: a repair case (§11.5).
	img := nativeTestImage(t, Set)
	s, err := decodeNativeSuper("", img, int64(len(img)))
	must(t, err)
	ma, err := decodeNativeMeta("", img[nativeMetaAOff:], nativeMetaAOff, &s, int64(len(img)))
	must(t, err)
	for name, at := range map[string]uint64{"meta": nativeMetaAOff + 40, "root": ma.rootOff} {
		b := bytes.Clone(img)
		b[at] ^= 1
		p := dir + "/" + name + ".dets"
		must(t, os.WriteFile(p, b, 0o644))
		var ce *CorruptionError
		if _, err := Open(p, Options{}); !errors.Is(err, ErrNeedsRepair) || !errors.As(err, &ce) {
			t.Errorf("damaged %s, NoRepair: %v, want ErrNeedsRepair with a *CorruptionError", name, err)
		}
		if !bytes.Equal(readFileT(t, p), b) {
			t.Errorf("damaged %s: a refused open changed the file", name)
		}
		// Read-write AutoRepair: the full repair, here of an empty table.
		tab, err := Open(p, Options{Repair: AutoRepair})
		if err != nil {
			t.Fatalf("damaged %s, AutoRepair: %v, want the full repair", name, err)
		}
		if info, err := tab.Info(); err != nil || info.Format != Native || info.Size != 0 || !info.Clean {
			t.Errorf("damaged %s, repaired: %+v, %v", name, info, err)
		}
		must(t, tab.Close())
	}

	// The closed one opens, with its kind checked.
	if _, err := Open(nat, Options{Kind: Set}); !errors.Is(err, ErrKindMismatch) {
		t.Errorf("kind mismatch: %v", err)
	}
	if _, err := Open(nat, Options{ReadOnly: true, Repair: ForceRepair}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only forced repair: %v, want ErrReadOnly", err)
	}
	tab = openT(t, nat, Options{Repair: NoRepair, ReadOnly: true})
	if objs, err := tab.Lookup(etf.Int(1)); err != nil || len(objs) != 1 {
		t.Errorf("Lookup: %v %v", objs, err)
	}
	must(t, tab.Close())
}

// reusedLater reports whether a PUT after recs[i] names recs[i]'s cell:
// the epoch reused it once a record superseded its bucket (§7.3), so it
// holds a later bucket and recs[i]'s does not verify.
func reusedLater(recs []nativeLogRec, i int) bool {
	for _, r := range recs[i+1:] {
		if r.typ == recPut && r.entry == recs[i].entry {
			return true
		}
	}
	return false
}

// imageLog reads the log of nat's current epoch from img, a copy of the
// table's file at path.
func imageLog(t *testing.T, path string, img []byte, nat *nativeState) nativeLog {
	t.Helper()
	read := func(off uint64, k int) ([]byte, error) {
		if off+uint64(k) > uint64(len(img)) {
			return nil, fmt.Errorf("read past the end")
		}
		return img[off : off+uint64(k)], nil
	}
	lg, err := readNativeLog(path, read, nat.super.revision, nat.super.fileID, nat.meta.gen, nat.meta.seq, nat.super.base, uint64(len(img)))
	must(t, err)
	return lg
}

// TestNativeParseKeepsRecordSums: parseNative gives each object the
// checksum of the record it verified, which a rewrite of the bucket then
// copies instead of hashing the object again.
func TestNativeParseKeepsRecordSums(t *testing.T) {
	tab, err := Open(filepath.Join(t.TempDir(), "t.dets"), Options{Format: Native, Kind: Bag})
	must(t, err)
	t.Cleanup(func() { tab.Close() })
	for i := range 3 {
		must(t, tab.Insert(etf.Tuple{etf.Int(7), etf.Int(i)}))
	}
	slot := tab.slotFor(tab.hashKey(etf.Int(7)))
	e, err := tab.entry(slot)
	must(t, err)
	b := make([]byte, e.size)
	must(t, readFull(tab.f, b, e.ptr))
	gs, objs, err := tab.parseNative(b, e, nil, nil)
	must(t, err)
	if len(gs) != 1 || len(objs) != 3 {
		t.Fatalf("%d groups, %d objects", len(gs), len(objs))
	}
	for _, o := range objs {
		rec := appendNativeObject(nil, o.enc, 0)
		if o.sum != le.Uint64(rec) {
			t.Fatalf("object %x: sum %#x, its record's checksum %#x", o.enc, o.sum, le.Uint64(rec))
		}
	}
}
