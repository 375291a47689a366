package dets

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/godets/godets/etf"
)

// freeGuardTable builds a closed otp9 set of n objects {K, Pad} and
// returns its path with a live bucket of it: its slot entry and the keys
// it holds.
func freeGuardTable(t *testing.T, n int) (path string, live slotEntry, keys []etf.Term) {
	t.Helper()
	path = tmpFile(t, "guard.dets")
	tab := mustOpen(t, path, Options{})
	for i := range n {
		if err := tab.Insert(tup(etf.Int(i), bin(fmt.Sprintf("%0100d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	// The bucket with the most keys, so that losing it shows.
	for slot := range tab.h.next {
		e, err := tab.entry(slot)
		if err != nil {
			t.Fatal(err)
		}
		if e.size == 0 || e.size <= live.size {
			continue
		}
		live, keys = e, bucketKeys(t, tab, slot, e)
	}
	if err := tab.Close(); err != nil {
		t.Fatal(err)
	}
	if live.size == 0 {
		t.Fatal("no live bucket")
	}
	return path, live, keys
}

// bucketKeys returns the keys of the bucket e of slot, in bucket order.
func bucketKeys(t *testing.T, tab *Table, slot uint64, e slotEntry) []etf.Term {
	t.Helper()
	body, err := tab.readBucket(slot, e)
	must(t, err)
	gs, _, perr := tab.parseBucket(body, nil, nil)
	if perr != nil {
		t.Fatal(perr)
	}
	keys := make([]etf.Term, len(gs))
	for i := range gs {
		keys[i], err = gs[i].keyTerm(tab.keyPos)
		must(t, err)
	}
	return keys
}

// rewriteFreeLists replaces a closed otp9 file's free lists with what
// change makes of them (the header's MD5 does not cover them).
func rewriteFreeLists(t *testing.T, path string, change func(b *buddy)) {
	t.Helper()
	img := readFileT(t, path)
	flp := int64(be.Uint32(img))
	b, _, msg := parseFreeLists(img[flp:len(img)-trailerSize], baseAddr)
	if msg != "" {
		t.Fatalf("free lists of %s: %s", path, msg)
	}
	// The trailer is FreelistsPointer + the area + 4 - FlBase; keep the
	// FlBase term as it was.
	adjust := int64(be.Uint32(img[len(img)-trailerSize:])) - int64(len(img)-trailerSize+trailerSize)
	change(b)
	if blk, ok := firstOverlap(b.sortedBlocks()); !ok {
		t.Fatalf("the changed free lists overlap at %d", blk)
	}
	area := b.appendFreeLists(nil)
	area = be.AppendUint32(area, uint32(flp+int64(len(area))+trailerSize+adjust))
	img = append(img[:flp], area...)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dropClassesUpTo removes every free block of class c or below, so that
// the next small allocation takes the block the test adds.
func dropClassesUpTo(b *buddy, c int) {
	for i := 1; i <= c; i++ {
		b.free[i] = nil
	}
}

// nameFree makes the free lists name the block of class c at a as the only
// one of its class or below, dropping any free block it overlaps.
func nameFree(b *buddy, a int64, c int) {
	dropClassesUpTo(b, c)
	for k := c + 1; k <= maxBuddyClass; k++ {
		for _, blk := range slices.Clone(b.free[k]) {
			if int64(blk) < a+blockSize(c) && int64(blk)+blockSize(k) > a {
				b.remove(k, int64(blk))
			}
		}
	}
	b.insert(c, a)
}

// TestFreeListNamingLiveBucket: a damaged free list that names a block
// holding a live bucket (the whole block, or the second half of it) opens
// as OTP would open it, but the first allocation of that block stops the
// table with ErrCorrupt instead of writing over the bucket: the file is
// left needing a repair, and the repair keeps every object. Before the
// guard, the insert overwrote the bucket and its keys were gone.
func TestFreeListNamingLiveBucket(t *testing.T) {
	for _, where := range []string{"whole", "second half", "misaligned"} {
		t.Run(where, func(t *testing.T) {
			const n = 300
			path, live, keys := freeGuardTable(t, n)
			c := buddyClass(live.size)
			rewriteFreeLists(t, path, func(b *buddy) {
				switch where {
				case "whole":
					nameFree(b, live.ptr, c)
				case "second half":
					// live.size > blockSize(c-1): the bucket's tail lies in
					// its block's second half.
					nameFree(b, live.ptr+blockSize(c-1), c-1)
				default:
					// A hostile address, off the buddy grid: only the probe
					// at the bucket's own class finds it.
					nameFree(b, live.ptr+16, c)
				}
			})
			tab, err := Open(path, Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			var stop error
			added := 0
			if where == "misaligned" {
				// A bucket of exactly class c takes the whole block, which
				// only the probe at class c can see past.
				stop = tab.Insert(objectOfClass(t, tab, c))
			}
			for i := n; i < n+200 && stop == nil; i++ {
				stop = tab.Insert(tup(etf.Int(i), bin("x")))
				if stop == nil {
					added++
				}
			}
			var ce *CorruptionError
			if !errors.Is(stop, ErrCorrupt) || !errors.As(stop, &ce) || ce.Section != "freelist" {
				t.Fatalf("inserts over the damaged free list: %v, want a freelist CorruptionError", stop)
			}
			t.Logf("stopped after %d inserts: %v", added, stop)
			if err := tab.Insert(tup(etf.Int(-1), bin("x"))); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("insert after the stop: %v, want the same error", err)
			}
			tab.Close()
			if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) {
				t.Fatalf("reopen: %v, want ErrNeedsRepair", err)
			}
			tab = openT(t, path, Options{Repair: AutoRepair})
			for _, k := range keys {
				if objs := lookupT(t, tab, k); len(objs) != 1 {
					t.Errorf("key %s of the guarded bucket: %d objects after repair", etf.Format(k), len(objs))
				}
			}
			info, err := tab.Info()
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != n+added {
				t.Errorf("%d objects after repair, want %d", info.Size, n+added)
			}
		})
	}
}

// objectOfClass returns a new object {K, Pad} whose key's slot is empty
// and whose bucket is of class c.
func objectOfClass(t *testing.T, tab *Table, c int) etf.Term {
	t.Helper()
	for k := 100000; k < 200000; k++ {
		e, err := tab.entry(tab.slotFor(keyHash(etf.Int(k))))
		must(t, err)
		if e.size != 0 {
			continue
		}
		for pad := range int(blockSize(c)) {
			o := tup(etf.Int(k), bin(strings.Repeat("z", pad)))
			enc, err := etf.Encode(o)
			must(t, err)
			if buddyClass(int64(bucketHeaderSize+4+len(enc))) == c {
				return o
			}
		}
	}
	t.Fatalf("no object of class %d", c)
	return nil
}

// TestFreeListOverlappingSegment: a free list naming a segment's block is
// a bad free list, found at open: NoRepair refuses the file unchanged,
// AutoRepair rebuilds it with every object.
func TestFreeListOverlappingSegment(t *testing.T) {
	const n = 3000 // enough to grow segments in the buddy area
	path, _, _ := freeGuardTable(t, n)
	tab := mustOpen(t, path, Options{ReadOnly: true})
	segs := slices.Clone(tab.segs)
	tab.Close()
	seg := slices.Max(segs)
	if seg < baseAddr+segmentSize {
		t.Fatalf("no segment above the base: %v", segs)
	}
	rewriteFreeLists(t, path, func(b *buddy) {
		c := buddyClass(segmentSize)
		dropClassesUpTo(b, c)
		b.insert(c, seg)
	})
	before := fileHash(t, path)
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrNeedsRepair) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open: %v, want ErrNeedsRepair naming the free lists", err)
	}
	if _, err := Open(path, Options{ReadOnly: true, Repair: AutoRepair}); !errors.Is(err, ErrNotClosed) {
		t.Fatalf("read-only Open: %v, want ErrNotClosed", err)
	}
	if fileHash(t, path) != before {
		t.Fatal("a refused open changed the file")
	}
	tab = openT(t, path, Options{Repair: AutoRepair})
	info, err := tab.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != n {
		t.Errorf("%d objects after repair, want %d", info.Size, n)
	}
}

// TestFreeGuardChurn: on healthy files the guard never fires. Each kind
// goes through reopen cycles of random inserts (pads that span several
// size classes) and deletes, so that every session allocates from free
// lists read from the file; the contents must match the model at the end.
func TestFreeGuardChurn(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	cycles := 25
	if testing.Short() {
		cycles = 8
	}
	for _, kind := range allKinds {
		path := tmpFile(t, "churn.dets")
		m := newModel(kind)
		for range cycles {
			tab := mustOpen(t, path, Options{Kind: kind})
			for range 150 {
				k := rng.Intn(400)
				if rng.Intn(3) == 0 {
					deleteBoth(t, tab, m, etf.Int(k))
					continue
				}
				insertBoth(t, tab, m, paddedObj(k, rng.Intn(3), rng.Intn(700)))
			}
			if err := tab.Close(); err != nil {
				t.Fatalf("%s: Close: %v", kind, err)
			}
		}
		tab := openT(t, path, Options{Kind: kind})
		checkModel(t, tab, m, 400)
	}
}

// TestFreeListNamingTopBucket: a damaged free list naming the top bucket
// made the save's tail compaction end the data below it: Close wrote the
// free lists over the bucket, cut the file, and said the file was closed,
// with the bucket's keys gone even for a forced repair. Now the save stops
// with ErrCorrupt, the file stays not closed, and the repair keeps them.
func TestFreeListNamingTopBucket(t *testing.T) {
	const n = 300
	path, _, _ := freeGuardTable(t, n)
	tab := mustOpen(t, path, Options{ReadOnly: true})
	var top slotEntry
	var topKeys []etf.Term
	var other etf.Term
	for slot := range tab.h.next {
		e, err := tab.entry(slot)
		must(t, err)
		if e.size == 0 {
			continue
		}
		keys := bucketKeys(t, tab, slot, e)
		if e.ptr < top.ptr {
			other = keys[0]
			continue
		}
		if len(topKeys) > 0 {
			other = topKeys[0]
		}
		top, topKeys = e, keys
	}
	for _, s := range tab.segs {
		if s > top.ptr {
			t.Fatalf("segment %d above the top bucket %d: the test needs another table", s, top.ptr)
		}
	}
	must(t, tab.Close())
	rewriteFreeLists(t, path, func(b *buddy) { b.insert(buddyClass(top.size), top.ptr) })

	tab = mustOpen(t, path, Options{})
	must(t, tab.Delete(other)) // frees a bucket: the save compacts the tail
	if err := tab.Close(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Close over the damaged free list: %v, want ErrCorrupt", err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNeedsRepair) {
		t.Fatalf("reopen: %v, want ErrNeedsRepair", err)
	}
	tab = openT(t, path, Options{Repair: AutoRepair})
	for _, k := range topKeys {
		if objs := lookupT(t, tab, k); len(objs) != 1 {
			t.Errorf("key %s of the top bucket at %d: %d objects after repair", etf.Format(k), top.ptr, len(objs))
		}
	}
	if info, err := tab.Info(); err != nil || info.Size != n-1 {
		t.Errorf("%d objects after repair (%v), want %d", info.Size, err, n-1)
	}
}

// TestFreeListMisalignedSameClass: a hostile free-list address 16 bytes
// into a live bucket of the same class, at an odd multiple of its size:
// neither the grid scan (it starts past the bucket's header) nor a probe
// of the larger classes sees the bucket; the probe at its own class does.
// The insert used to write over it.
func TestFreeListMisalignedSameClass(t *testing.T) {
	path := tmpFile(t, "mis.dets")
	tab := mustOpen(t, path, Options{})
	for i := range 300 {
		must(t, tab.Insert(tup(etf.Int(i), bin(fmt.Sprintf("%0100d", i)))))
	}
	for i := 0; i < 300; i += 3 {
		must(t, tab.Delete(etf.Int(i)))
	}
	must(t, tab.Close())

	tab = mustOpen(t, path, Options{ReadOnly: true})
	base := tab.bud.base
	live := map[int64]slotEntry{}
	for slot := range tab.h.next {
		e, err := tab.entry(slot)
		must(t, err)
		if e.size != 0 {
			live[e.ptr] = e
		}
	}
	var x slotEntry
	var keys []etf.Term
	for slot := range tab.h.next {
		e, _ := tab.entry(slot)
		if e.size == 0 {
			continue
		}
		sz := blockSize(buddyClass(e.size))
		if ((e.ptr-base)/sz)%2 != 1 {
			continue
		}
		if _, ok := live[e.ptr+sz]; ok {
			continue
		}
		hitsTable := false
		for _, sa := range tab.segs {
			if sa < e.ptr+16+sz && sa+segmentSize > e.ptr+16 {
				hitsTable = true
			}
		}
		for _, pa := range tab.parts {
			if pa != 0 && int64(pa) < e.ptr+16+sz && int64(pa)+partSize > e.ptr+16 {
				hitsTable = true
			}
		}
		if hitsTable {
			continue
		}
		keys, x = bucketKeys(t, tab, slot, e), e
		break
	}
	must(t, tab.Close())
	if x.size == 0 {
		t.Fatal("no bucket at an odd multiple of its size: the test needs another table")
	}
	c := buddyClass(x.size)
	a := x.ptr + 16
	rewriteFreeLists(t, path, func(b *buddy) { nameFree(b, a, c) })

	tab = mustOpen(t, path, Options{})
	// An object for an empty slot whose bucket takes class c exactly.
	err := tab.Insert(objectOfClass(t, tab, c))
	tab.Close()
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("insert into the block named at %d, inside the live bucket at %d (class %d): %v, want ErrCorrupt", a, x.ptr, c, err)
	}
	tab = openT(t, path, Options{Repair: AutoRepair})
	for _, k := range keys {
		if objs := lookupT(t, tab, k); len(objs) != 1 {
			t.Errorf("key %s of the bucket at %d: %d objects after repair", etf.Format(k), x.ptr, len(objs))
		}
	}
}

// TestFreeGuardReadErrorKeepsFreeLists: a read failing in the guard's
// check of a block fails that write only, like any read error: the block
// goes back to the allocator, and a later save's free lists account for
// every block (Check). It used to stay out of both.
func TestFreeGuardReadErrorKeepsFreeLists(t *testing.T) {
	ffs := &faultFS{}
	path := tmpFile(t, "vetfault.dets")
	tab, err := Open(path, Options{FS: ffs})
	must(t, err)
	for i := range 600 {
		must(t, tab.Insert(paddedObj(i, 0, i%300)))
	}
	for i := 0; i < 600; i += 3 {
		must(t, tab.Delete(etf.Int(i)))
	}
	must(t, tab.Close())
	failed := 0
	for nth := 1; nth <= 12; nth++ {
		tab, err := Open(path, Options{FS: ffs})
		must(t, err)
		if len(tab.fileFree.blocks) == 0 {
			t.Fatal("the table has no free space from its file: the test needs holes")
		}
		ffs.arm(nth, 0)
		err = tab.Insert(paddedObj(1000+nth, 0, 200))
		ffs.arm(0, 0)
		if err != nil {
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("read #%d fails: Insert returned %v", nth, err)
			}
			failed++
		}
		must(t, tab.Sync())
		mustCheck(t, tab)
		must(t, tab.Close())
	}
	if failed == 0 {
		t.Fatal("no fault hit an insert")
	}
	t.Logf("%d of 12 faults hit an insert", failed)
}
