package dets

import (
	"bytes"
	"math"
	"math/rand"
	"os"
	"testing"

	"github.com/godets/godets/etf"
)

// Power-loss images that a native file's revision 2 survives and revision
// 1 did not: found by an audit of the recovery (the writes each image
// keeps are ones a disk may keep, docs/format-native.md §10.4).

// TestNativeLostSessionLogTail: a power loss drops the first sector of the head
// page of epoch g (records 0..6 of session 1) but keeps the rest. The file
// opens clean at meta g. Session 2 writes 7 records (same epoch g, same
// seqs S+1..S+7) and is killed. Recovery then reads session 1's stale
// records 7.. as if they continued session 2's log.
func TestNativeLostSessionLogTail(t *testing.T) {
	path := tmpFile(t, "a.dets")
	tab := openT(t, path, Options{Kind: Set, Format: Native})
	for i := range 100 {
		must(t, tab.Insert(etf.Tuple{etf.Int(i), etf.Binary("synced")}))
	}
	must(t, tab.Sync())
	gen := tab.nat.meta.gen
	s0 := readFileT(t, path)
	// Session 1: 7 inserts (records 0..6, sector 0 of the head page), then
	// the delete of a synced key (record 7, sector 1), then more inserts.
	for i := range 7 {
		must(t, tab.Insert(etf.Tuple{etf.Int(1000 + i), etf.Binary("s1")}))
	}
	must(t, tab.Delete(etf.Int(5)))
	for i := range 5 {
		must(t, tab.Insert(etf.Tuple{etf.Int(2000 + i), etf.Binary("s1-late")}))
	}
	i1 := readFileT(t, path)
	must(t, tab.Close())

	// The power-loss image: the writes into sector 0 of the head page are lost.
	head := nativeLogHead(gen)
	p := append([]byte(nil), i1...)
	copy(p[head:head+512], s0[head:head+512])
	p2 := tmpFile(t, "p.dets")
	must(t, os.WriteFile(p2, p, 0o644))

	// Session 2: the file opens clean; key 5 is there.
	t2 := openT(t, p2, Options{Repair: NoRepair})
	if got, _ := t2.Lookup(etf.Int(5)); len(got) != 1 {
		t.Fatalf("session 2 does not see synced key 5: %v", got)
	}
	for i := range 7 {
		must(t, t2.Insert(etf.Tuple{etf.Int(3000 + i), etf.Binary("session2-xx")}))
	}
	i2 := readFileT(t, p2) // kill -9 of session 2
	must(t, t2.Close())
	k := tmpFile(t, "k.dets")
	must(t, os.WriteFile(k, i2, 0o644))
	t3 := openT(t, k, Options{Repair: AutoRepair})
	st, ok, _ := t3.Recovery()
	t.Logf("recovery %v %+v", ok, st)
	if got, _ := t3.Lookup(etf.Int(5)); len(got) != 1 {
		t.Errorf("synced key 5 lost after session 2's crash (session 2 never deleted it): %v", got)
	}
	for i := range 5 {
		if got, _ := t3.Lookup(etf.Int(2000 + i)); len(got) != 0 {
			t.Errorf("key %d of the lost session 1 is back: %v", 2000+i, got)
		}
	}
	for i := range 7 {
		if got, _ := t3.Lookup(etf.Int(3000 + i)); len(got) != 1 {
			t.Errorf("session 2 key %d: %v", 3000+i, got)
		}
	}
	must(t, t3.Close())
}

// TestNativeTornBucketMix: a bucket write torn at a 512-byte sector keeps
// its new header and first record and the old bytes of its cell after
// them, which are a record of an older bucket of the same slot. The
// recovery accepts the mix and a synced version goes back to an older one.
func TestNativeTornBucketMix(t *testing.T) {
	slotOf := func(k int) uint64 {
		enc, _ := etf.Encode(etf.Int(k))
		return nativeKeyHash(enc[1:]) & 511
	}
	k1, k2 := -1, -1
	seen := map[uint64]int{}
	for k := 0; k < 256 && k2 < 0; k++ {
		if j, ok := seen[slotOf(k)]; ok {
			k1, k2 = j, k
		}
		seen[slotOf(k)] = k
	}
	if k2 < 0 {
		t.Fatal("no two keys of 0..255 share a slot")
	}
	recSize := func(o etf.Term) int { enc, _ := etf.Encode(o); return nativeObjectRecordSize(len(enc)) }
	n1 := 0
	for n := 300; n < 600; n++ {
		if 32+recSize(etf.Tuple{etf.Int(k1), etf.Binary(bytes.Repeat([]byte{'a'}, n))}) == 512 {
			n1 = n
		}
	}
	v := func(c byte, n int) etf.Binary { return etf.Binary(bytes.Repeat([]byte{c}, n)) }
	t.Logf("keys %d %d slot %d, n1 %d", k1, k2, slotOf(k1), n1)

	path := tmpFile(t, "t.dets")
	tab := openT(t, path, Options{Kind: Set, Format: Native})
	must(t, tab.Insert(etf.Tuple{etf.Int(k1), v('a', n1)}))
	must(t, tab.Insert(etf.Tuple{etf.Int(k2), v('o', 20)})) // old
	must(t, tab.Sync())
	e0, _ := tab.entry(slotOf(k1))
	must(t, tab.Insert(etf.Tuple{etf.Int(k2), v('s', 20)})) // synced
	must(t, tab.Sync())
	s := readFileT(t, path)
	must(t, tab.Insert(etf.Tuple{etf.Int(k1), v('b', n1)})) // unsynced
	e2, _ := tab.entry(slotOf(k1))
	t.Logf("entry after first Sync %+v, after the unsynced write %+v", e0, e2)
	if e0.ptr != e2.ptr || e0.ptr%512 != 0 || e2.size <= 512 {
		t.Fatalf("the layout this test builds did not come about: entries %+v, %+v", e0, e2)
	}
	img := readFileT(t, path)
	must(t, tab.Close())
	x := e2.ptr
	copy(img[x+512:x+1024], s[x+512:x+1024]) // the bucket's second sector stays old
	p := tmpFile(t, "p.dets")
	must(t, os.WriteFile(p, img, 0o644))
	rt := openT(t, p, Options{Repair: AutoRepair})
	st, ok, _ := rt.Recovery()
	t.Logf("recovery %v %+v", ok, st)
	got, err := rt.Lookup(etf.Int(k2))
	must(t, err)
	if len(got) != 1 || !etf.Equal(got[0], etf.Tuple{etf.Int(k2), v('s', 20)}) {
		t.Errorf("key %d after the torn write: %v, want its synced version", k2, got)
	}
	must(t, rt.Close())
}

// TestNativeRevision1Files: a file of revision 1 (records without a
// session nonce, PUTs binding the bucket header) still opens, is written
// by its own rules, recovers after a kill and repairs; the repair writes
// the current revision.
func TestNativeRevision1Files(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	path := tmpFile(t, "r1.dets")
	opts := withTuning(Options{Kind: Bag, Format: Native}, func(tn *tuning) { tn.nativeRevision = 1 })
	tab, m := fillNativeOpts(t, path, opts, rng, 300, 2000)
	must(t, tab.Sync())
	for i := range 200 {
		obj := etf.Tuple{etf.Int(i), etf.Binary("after the sync")}
		must(t, tab.Insert(obj))
		m.Insert(obj)
	}
	if tab.nat.super.revision != 1 || tab.nat.nonce != 0 {
		t.Fatalf("revision %d, nonce %#x: the tuning did not give a revision 1 file", tab.nat.super.revision, tab.nat.nonce)
	}
	killed := tmpFile(t, "killed.dets")
	must(t, os.WriteFile(killed, readFileT(t, path), 0o644))
	must(t, tab.Close())

	lg, _, _ := nativeTestLog(t, readFileT(t, killed))
	for _, r := range lg.recs {
		if r.nonce != 0 {
			t.Fatalf("a revision 1 record with nonce %#x", r.nonce)
		}
	}
	repaired := tmpFile(t, "repaired.dets")
	must(t, os.WriteFile(repaired, readFileT(t, killed), 0o644))

	rt := openT(t, killed, Options{Repair: AutoRepair})
	if st, ok, err := rt.Recovery(); err != nil || !ok || st.Replayed == 0 || st.GroupsCut != 0 {
		t.Fatalf("recovery of a revision 1 file: %+v, %v, %v", st, ok, err)
	}
	checkModel(t, rt, m, 300)
	must(t, rt.Close())

	_, err := Repair(repaired, Options{}, nil)
	must(t, err)
	rp := openT(t, repaired, Options{})
	checkModel(t, rp, m, 300)
	if rp.nat.super.revision != nativeRevision {
		t.Fatalf("the repair wrote revision %d", rp.nat.super.revision)
	}
}

// TestMemLen: a length a file gives becomes an int only where it fits,
// so a 32-bit build refuses a crafted one instead of panicking.
func TestMemLen(t *testing.T) {
	if n, ok := memLen(12345); !ok || n != 12345 {
		t.Fatalf("memLen(12345) = %d, %v", n, ok)
	}
	if _, ok := memLen(uint64(math.MaxInt) + 1); ok {
		t.Fatalf("memLen took %d", uint64(math.MaxInt)+1)
	}
	if n, ok := memLen(math.MaxInt); !ok || n != math.MaxInt {
		t.Fatalf("memLen(MaxInt) = %d, %v", n, ok)
	}
}
