package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"testing"

	"github.com/godets/godets/etf"
)

// nativeSlotsFor is the slot count the load rule of docs/format-native.md
// §5.3 gives a native table whose key count peaked at peak: the smallest
// multiple of 512 with peak <= 2 * next, within [minSlots, maxSlots]
// (tables never shrink).
func nativeSlotsFor(peak, minSlots, maxSlots uint64) uint64 {
	next := (peak/2 + nativeSlotsPerSeg - 1) / nativeSlotsPerSeg * nativeSlotsPerSeg
	return min(max(next, minSlots), maxSlots)
}

// checkNativeShape checks that tab's slot count follows the load rule for
// peak and that Check's shared rules (every key in the slot its hash
// names at the bucket's level, order, counts) hold.
func checkNativeShape(t *testing.T, tab *Table, peak, minSlots, maxSlots uint64) {
	t.Helper()
	info, err := tab.Info()
	must(t, err)
	if want := nativeSlotsFor(peak, minSlots, maxSlots); uint64(info.NoSlots.Next) != want {
		t.Fatalf("%d slots after a peak of %d keys, want %d", info.NoSlots.Next, peak, want)
	}
	if err := tab.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
}

// TestNativeGrowModel inserts well past several doublings (512 to 8192
// slots and on), then deletes most keys, on native tables of each kind,
// against a model, with Sync, Close, reopen and read-only opens between
// rounds; the slot count must follow the load rule and never shrink.
func TestNativeGrowModel(t *testing.T) {
	seed := testSeed(t)
	const keys = 24000
	for _, kind := range []Kind{Set, Bag, DuplicateBag} {
		t.Run(kind.String(), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			path := tmpFile(t, "grow.dets")
			opts := Options{Kind: kind, Format: Native}
			tab := openT(t, path, opts)
			m := newModel(kind)
			present, peak := 0, 0
			for round := range 7 {
				inserts := 9 // of 10: four rounds that grow, three that shrink the content
				if round >= 4 {
					inserts = 2
				}
				for range 7000 {
					key := rng.Int63n(keys)
					switch r := rng.Intn(10); {
					case r < inserts:
						obj := etf.Tuple{etf.Int(key), etf.Int(rng.Intn(3)), etf.Binary(make([]byte, rng.Intn(60)))}
						if rng.Intn(500) == 0 {
							obj[2] = etf.Binary(make([]byte, 3000)) // a bucket in a buddy block
						}
						if len(m.Lookup(etf.Int(key))) == 0 {
							present++
						}
						must(t, tab.Insert(obj))
						m.Insert(obj)
						peak = max(peak, present)
					case r < 9 || len(m.Lookup(etf.Int(key))) == 0:
						if len(m.Lookup(etf.Int(key))) > 0 {
							present--
						}
						must(t, tab.Delete(etf.Int(key)))
						m.Delete(etf.Int(key))
					default:
						objs := m.Lookup(etf.Int(key))
						obj := objs[rng.Intn(len(objs))]
						must(t, tab.DeleteObject(obj))
						m.DeleteObject(obj)
						if len(m.Lookup(etf.Int(key))) == 0 {
							present--
						}
					}
				}
				checkModel(t, tab, m, keys)
				checkNativeShape(t, tab, uint64(peak), nativeDefaultMinSlots, nativeDefaultMaxSlots)
				switch round % 3 {
				case 0:
					must(t, tab.Sync())
				case 1:
					must(t, tab.Close())
					tab = openT(t, path, Options{})
				case 2:
					must(t, tab.Close())
					ro := openT(t, path, Options{Format: Native, ReadOnly: true})
					checkModel(t, ro, m, keys)
					checkNativeShape(t, ro, uint64(peak), nativeDefaultMinSlots, nativeDefaultMaxSlots)
					must(t, ro.Close())
					tab = openT(t, path, opts)
				}
				checkModel(t, tab, m, keys)
			}
			if peak < 16*nativeDefaultMinSlots {
				t.Fatalf("peak of %d keys: not several doublings", peak)
			}
			must(t, tab.Close())
		})
	}
}

// TestNativeGrowBounds: growth starts from MinSlots and stops at MaxSlots.
func TestNativeGrowBounds(t *testing.T) {
	for _, c := range []struct{ minSlots, maxSlots, keys uint64 }{
		{2048, 0, 1000},   // below the load rule's start: stays at MinSlots
		{2048, 0, 9000},   // from MinSlots on
		{512, 1024, 5000}, // capped
	} {
		t.Run(fmt.Sprintf("min%d-max%d-%d", c.minSlots, c.maxSlots, c.keys), func(t *testing.T) {
			path := tmpFile(t, "bounds.dets")
			tab := openT(t, path, Options{Format: Native, MinSlots: int(c.minSlots), MaxSlots: int(c.maxSlots)})
			maxSlots := uint64(nativeDefaultMaxSlots)
			if c.maxSlots != 0 {
				maxSlots = c.maxSlots
			}
			for i := range c.keys {
				must(t, tab.Insert(tup(etf.Int(int64(i)), bin("v"))))
			}
			checkNativeShape(t, tab, c.keys, c.minSlots, maxSlots)
			must(t, tab.Close())
			tab = openT(t, path, Options{})
			checkNativeShape(t, tab, c.keys, c.minSlots, maxSlots)
			for i := range c.keys {
				if ok, err := tab.Member(etf.Int(int64(i))); err != nil || !ok {
					t.Fatalf("Member(%d) = %v, %v", i, ok, err)
				}
			}
			must(t, tab.Close())
		})
	}
}

// TestNativeGrowLog checks the log a growth step writes against the
// replay code's reading of it (applyNativeLog): one group that opens with
// the GROW record and ends with the split's last PUT, every PUT bound to
// its bucket, and a replay of the whole log that gives the shape, counts
// and slot entries the table holds in memory.
func TestNativeGrowLog(t *testing.T) {
	path := tmpFile(t, "growlog.dets")
	tab := openT(t, path, Options{Format: Native, Kind: DuplicateBag})
	const n = 4*nativeDefaultMinSlots + 300 // two growth steps: 1024, then 1536 slots
	for i := range n {
		must(t, tab.Insert(tup(etf.Int(int64(i)), bin("v"))))
	}
	must(t, tab.Insert(tup(etf.Int(7), bin("w"))))
	nat := tab.nat
	data := readFileT(t, path)
	lg := imageLog(t, path, data, nat)
	grows := 0
	for i, r := range lg.recs {
		switch r.typ {
		case recGrow:
			grows++
			if r.endsGroup() || i == 0 || !lg.recs[i-1].endsGroup() {
				t.Fatalf("record %d: GROW %+v does not open a group", i, r)
			}
			// The group runs to its end record; PUT or EMPTY only.
			j := i + 1
			for ; !lg.recs[j].endsGroup(); j++ {
				if lg.recs[j].typ == recGrow {
					t.Fatalf("record %d: two GROWs in one group", j)
				}
			}
			var dObj, dKeys int32
			for _, q := range lg.recs[i+1 : j+1] {
				dObj += q.dObj
				dKeys += q.dKeys
			}
			if dObj != 0 || dKeys != 0 {
				t.Fatalf("growth group changes the counts by %d objects, %d keys", dObj, dKeys)
			}
		case recPut:
			if reusedLater(lg.recs, i) {
				continue // its cell holds a later bucket now (§7.3)
			}
			if _, err := verifyNativeBucketAt(path, data, &r, nativeEntry(r.entry)); err != nil {
				t.Fatalf("record %d: %v", i, err)
			}
		}
	}
	if grows != 2 {
		t.Fatalf("%d GROW records, want 2", grows)
	}
	st, err := applyNativeLog(path, lg.recs, &nat.meta, nat.super.maxSlots)
	must(t, err)
	if st.next != tab.h.next || st.m != tab.h.m || st.n != tab.h.n || st.noObjects != tab.h.noObjects || st.noKeys != tab.h.noKeys {
		t.Fatalf("replay: next %d M %d N %d, %d objects %d keys; table: %+v", st.next, st.m, st.n, st.noObjects, st.noKeys, tab.h.shape)
	}
	for slot := range tab.h.next {
		e, err := tab.entry(slot)
		must(t, err)
		if got := st.entries[slot]; got != nativeEntry(tab.wordOf(e)) {
			t.Fatalf("slot %d: replay gives %v, the table holds %v", slot, got, nativeEntry(tab.wordOf(e)))
		}
	}
	must(t, tab.Close())
	tab = openT(t, path, Options{})
	checkNativeShape(t, tab, n, nativeDefaultMinSlots, nativeDefaultMaxSlots)
	if objs, err := tab.Lookup(etf.Int(7)); err != nil || len(objs) != 2 {
		t.Fatalf("Lookup(7) = %v, %v", objs, err)
	}
	must(t, tab.Close())
}

// TestNativeGrowNewPart: the step that takes a table past 2^17 slots
// starts a second part, so the root grows by an entry; the checkpoint
// must write the longer root and the meta name its new length. The step
// is called directly: reaching it through the load rule takes 2^18 keys.
func TestNativeGrowNewPart(t *testing.T) {
	path := tmpFile(t, "part.dets")
	tab := openT(t, path, Options{Format: Native, MinSlots: nativeSlotsPerPart})
	for i := range 3000 {
		must(t, tab.Insert(tup(etf.Int(int64(i)), bin("v"))))
	}
	tab.mu.Lock()
	err := tab.nativeGrow()
	tab.mu.Unlock()
	must(t, err)
	if len(tab.nat.parts) != 2 || tab.h.next != nativeSlotsPerPart+nativeSlotsPerSeg {
		t.Fatalf("%d parts, %d slots after the step", len(tab.nat.parts), tab.h.next)
	}
	must(t, tab.Sync())
	must(t, tab.Check())
	must(t, tab.Close())
	tab = openT(t, path, Options{})
	if tab.h.next != nativeSlotsPerPart+nativeSlotsPerSeg {
		t.Fatalf("reopened with %d slots", tab.h.next)
	}
	must(t, tab.Check())
	for i := range 3000 {
		if ok, err := tab.Member(etf.Int(int64(i))); err != nil || !ok {
			t.Fatalf("Member(%d) = %v, %v", i, ok, err)
		}
	}
	must(t, tab.Close())
}

// TestNativePartsReadAtFirstUse: an open reads no part (§5.1); growth
// that appends a segment to a part no access has read, then a checkpoint,
// keeps that part's other children (the checkpoint reads the part before
// it writes its new version); and a damaged part fails the reads under it,
// not the open (§11.5), leaving the file as it was.
func TestNativePartsReadAtFirstUse(t *testing.T) {
	path := tmpFile(t, "parts.dets")
	tab := openT(t, path, Options{Format: Native, MinSlots: nativeSlotsPerPart})
	const n = 3000
	for i := range n {
		must(t, tab.Insert(tup(etf.Int(int64(i)), bin("v"))))
	}
	nativeGrowStep(t, tab) // a second part, of one segment
	must(t, tab.Close())

	tab = openT(t, path, Options{})
	for p := range tab.nat.parts {
		if tab.nat.segs[p*nativeSegsPerPart].off != 0 {
			t.Fatalf("part %d was read at open", p)
		}
	}
	nativeGrowStep(t, tab) // splits segment 1 (part 0) and appends segment 257 to part 1, unread
	if tab.nat.segs[nativeSegsPerPart].off != 0 {
		t.Fatal("the step read part 1; the test needs it unread")
	}
	must(t, tab.Close())
	tab = openT(t, path, Options{})
	if tab.h.next != nativeSlotsPerPart+2*nativeSlotsPerSeg {
		t.Fatalf("reopened with %d slots", tab.h.next)
	}
	must(t, tab.Check())
	for i := range n {
		if ok, err := tab.Member(etf.Int(int64(i))); err != nil || !ok {
			t.Fatalf("Member(%d) = %v, %v", i, ok, err)
		}
	}
	part1 := tab.nat.parts[1].off
	must(t, tab.Close())

	b, err := os.ReadFile(path)
	must(t, err)
	b[part1+20] ^= 1
	must(t, os.WriteFile(path, b, 0o644))
	tab, err = Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open of a file with a damaged part: %v", err)
	}
	defer tab.Close()
	var bad, good int
	for i := range n {
		_, err := tab.Member(etf.Int(int64(i)))
		var ce *CorruptionError
		switch {
		case err == nil:
			good++
		case errors.As(err, &ce) && ce.Section == "part" && ce.Offset == int64(part1):
			bad++
		default:
			t.Fatalf("Member(%d): %v", i, err)
		}
	}
	if bad == 0 || good == 0 {
		t.Fatalf("%d keys read, %d failed under the damaged part", good, bad)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, b) {
		t.Fatal("the open changed the file")
	}
}

// nativeNamedRanges lists the byte ranges of tab's file that its current
// meta and the epoch's log name: the tree's nodes, the free record, the
// log pages and every live bucket's cell or block. A write that must keep
// the last checkpoint plus its log recoverable touches none of them.
func nativeNamedRanges(t *testing.T, tab *Table) [][2]uint64 {
	t.Helper()
	nat := tab.nat
	m := nat.meta
	rs := [][2]uint64{{0, nativeSuperSize}, {uint64(nat.metaOff), uint64(nat.metaOff) + nativePageSize},
		{nativeLogHead(m.gen), nativeLogHead(m.gen) + nativePageSize},
		{m.rootOff, m.rootOff + m.rootLen}, {m.freeOff, m.freeOff + m.freeLen}}
	for _, b := range nat.logBlocks {
		rs = append(rs, [2]uint64{b, b + nativeLogBlockSize})
	}
	for slot := range tab.h.next { // reads every part, so that segs is whole
		e, err := tab.entry(slot)
		must(t, err)
		if e.size != 0 {
			rs = append(rs, [2]uint64{uint64(e.ptr), uint64(e.ptr + e.size)})
		}
	}
	for _, c := range slices.Concat(nat.segs, nat.parts) {
		if c.off != 0 {
			rs = append(rs, [2]uint64{c.off, c.off + nativePageSize})
		}
	}
	return rs
}

// TestNativeRebuildKeepsOld: InitTable and DeleteAllObjects on native
// write the new tree into free space only, so that up to their meta write
// the last checkpoint and its log (unsynced writes included) stay intact
// on disk: a kill at any point gives the old content or the new. The test
// compares every range the old meta and log name before and after the
// rebuild (the new meta is its last write, in the other page), then
// checks the new content across Close and reopen, with no log left.
func TestNativeRebuildKeepsOld(t *testing.T) {
	for _, op := range []string{"InitTable", "DeleteAllObjects", "SelectDelete"} {
		t.Run(op, func(t *testing.T) {
			path := tmpFile(t, "rebuild.dets")
			tab := openT(t, path, Options{Format: Native, Kind: Bag})
			for i := range 3000 {
				must(t, tab.Insert(tup(etf.Int(int64(i)), bin("old"))))
			}
			must(t, tab.Sync())
			for i := range 200 { // unsynced: the log names these buckets
				must(t, tab.Insert(tup(etf.Int(int64(i)), bin("later"))))
			}
			must(t, tab.Delete(etf.Int(2999)))
			ranges := nativeNamedRanges(t, tab)
			gen := tab.nat.meta.gen
			before := readFileT(t, path)
			var want []etf.Term
			switch op {
			case "InitTable":
				for i := range 5000 {
					want = append(want, tup(etf.Int(int64(i)), bin("new")))
				}
				must(t, tab.InitTable(seqOf(want)))
			case "DeleteAllObjects":
				must(t, tab.DeleteAllObjects())
			case "SelectDelete":
				n, err := tab.SelectDelete(etf.List{etf.Tuple{etf.Atom("_"), etf.List{}, etf.List{etf.Atom("true")}}})
				must(t, err)
				if n != 3199 {
					t.Fatalf("SelectDelete of all: %d objects, want 3199", n)
				}
			}
			after := readFileT(t, path)
			for _, r := range ranges {
				if !bytes.Equal(before[r[0]:r[1]], after[r[0]:r[1]]) {
					t.Fatalf("%s wrote into [%d, %d), which meta %d or its log names", op, r[0], r[1], gen)
				}
			}
			if tab.nat.meta.gen != gen+1 || tab.nat.records != 0 {
				t.Fatalf("after %s: meta gen %d (want %d), %d log records", op, tab.nat.meta.gen, gen+1, tab.nat.records)
			}
			check := func(tab *Table) {
				t.Helper()
				var got []etf.Term
				for o, err := range tab.All() {
					must(t, err)
					got = append(got, o)
				}
				slices.SortFunc(want, etf.CompareExact)
				sameObjects(t, op, got, want)
				must(t, tab.Check())
			}
			check(tab)
			checkNativeShape(t, tab, uint64(len(want)), nativeDefaultMinSlots, nativeDefaultMaxSlots)
			must(t, tab.Close())
			tab = openT(t, path, Options{Repair: NoRepair}) // clean: no log to replay
			check(tab)
			must(t, tab.Insert(tup(etf.Int(1), bin("x"))))
			must(t, tab.Close())
		})
	}
}

// TestNativeCheckpointBudget: an epoch ends by itself at its record
// budget and at its pending-space budget, so that a long write session
// bounds its log and reuses superseded cells: overwriting 100 keys
// 20,000 times keeps the file small, where without the budget every
// version would stay pending until Close.
func TestNativeCheckpointBudget(t *testing.T) {
	t.Parallel()
	path := tmpFile(t, "budget.dets")
	tab := openT(t, path, withTuning(Options{Format: Native}, func(tn *tuning) { tn.nativeBudgetRecords = 1000 }))
	for i := range 5000 {
		must(t, tab.Insert(tup(etf.Int(int64(i)), bin("v"))))
	}
	if tab.nat.meta.gen < 5 || tab.nat.records >= 1000 {
		t.Fatalf("after 5000 inserts with a budget of 1000 records: meta gen %d, %d records", tab.nat.meta.gen, tab.nat.records)
	}
	must(t, tab.Close())

	path = tmpFile(t, "pending.dets")
	tab = openT(t, path, withTuning(Options{Format: Native}, func(tn *tuning) { tn.nativeBudgetPending = 64 << 10 }))
	for i := range 20000 {
		must(t, tab.Insert(tup(etf.Int(int64(i%100)), bin(fmt.Sprint(i)), etf.Binary(make([]byte, 100)))))
	}
	must(t, tab.Close())
	if n := len(readFileT(t, path)); n > 1<<20 {
		t.Fatalf("file of 100 keys after 20000 overwrites: %d bytes", n)
	}
	tab = openT(t, path, Options{})
	for k := range 100 {
		objs, err := tab.Lookup(etf.Int(int64(k)))
		must(t, err)
		if len(objs) != 1 || string(objs[0].(etf.Tuple)[1].(etf.Binary)) != fmt.Sprint(19900+k) {
			t.Fatalf("key %d: %v", k, objs)
		}
	}
	must(t, tab.Close())
}

// nativeGrowStep runs one growth step of the native table tab directly,
// after what a write's begin does (loading the allocator): reaching it
// through the load rule takes a table of the step's size in keys.
func nativeGrowStep(t *testing.T, tab *Table) {
	t.Helper()
	tab.mu.Lock()
	err := tab.nativeBeginWrite()
	if err == nil {
		err = tab.nativeGrow()
	}
	tab.mu.Unlock()
	must(t, err)
}
