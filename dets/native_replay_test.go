package dets

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// testLog writes an epoch's log into an in-memory image as the writer of
// §10.2 does: records into the head page, and when one record slot is left
// a LINK to the next 64 KiB block, whose header comes with its first record.
type testLog struct {
	img          []byte
	fileID, gen  uint64
	seq          uint64
	page, index  uint64
	slot, slots  int
	nonce        uint64   // the writing session's
	blocks       []uint64 // free blocks the writer links to, in order
	writtenBlock []uint64
}

const testLogBase = nativeBase

func newTestLog(gen, metaSeq uint64, nBlocks int) *testLog {
	l := &testLog{img: make([]byte, testLogBase+nativeLogBlockSize*(nBlocks+1)), fileID: 77, gen: gen, seq: metaSeq,
		page: nativeLogHead(gen), slots: nativeHeadRecords, nonce: 0x5e5510}
	for i := range nBlocks {
		l.blocks = append(l.blocks, testLogBase+nativeLogBlockSize*uint64(i+1))
	}
	return l
}

func (l *testLog) put(r nativeLogRec) {
	if l.slot == 0 {
		h := nativeLogBlock{fileID: l.fileID, epoch: l.gen, index: l.index}
		h.encode(l.img[l.page:])
	}
	if l.slot == l.slots-1 {
		next := l.blocks[0]
		l.blocks = l.blocks[1:]
		l.write(nativeLogRec{typ: recLink, entry: next})
		l.writtenBlock = append(l.writtenBlock, next)
		l.page, l.slot, l.slots, l.index = next, 0, nativeBlockRecords, l.index+1
		l.put(r)
		return
	}
	l.write(r)
}

func (l *testLog) write(r nativeLogRec) {
	l.seq++
	r.epoch, r.seq, r.nonce = l.gen, l.seq, l.nonce
	r.encode(l.img[l.recOff():])
	l.slot++
}

func (l *testLog) recOff() uint64 {
	return l.page + nativeLogHeader + nativeLogRecord*uint64(l.slot)
}

func (l *testLog) read(off uint64, n int) ([]byte, error) {
	if off+uint64(n) > uint64(len(l.img)) {
		return nil, errors.New("read past the image")
	}
	return l.img[off : off+uint64(n)], nil
}

func (l *testLog) readLog(t *testing.T, metaSeq uint64) nativeLog {
	t.Helper()
	lg, err := readNativeLog("f", l.read, nativeRevision, l.fileID, l.gen, metaSeq, testLogBase, uint64(len(l.img)))
	if err != nil {
		t.Fatal(err)
	}
	return lg
}

func putRec(slot uint64, end bool) nativeLogRec {
	r := nativeLogRec{typ: recPut, slot: slot, entry: uint64(nativeCellEntry(testLogBase+48*slot, 2)), bsum: slot, dObj: 1, dKeys: 1}
	if end {
		r.flags = recEndGroup
	}
	return r
}

// TestNativeLogRead: a log across the head page and two blocks reads back
// whole; an older epoch's head page or a zeroed one is an empty log.
func TestNativeLogRead(t *testing.T) {
	l := newTestLog(5, 100, 2)
	for i := range 1200 {
		l.put(putRec(uint64(i%700), true))
	}
	lg := l.readLog(t, 100)
	if len(lg.recs) != 1200 || !slices.Equal(lg.blocks, l.writtenBlock) || len(lg.blocks) != 2 {
		t.Fatalf("%d records, blocks %x (written %x)", len(lg.recs), lg.blocks, l.writtenBlock)
	}
	for i, r := range lg.recs {
		if r.slot != uint64(i%700) || r.typ != recPut {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if lg := l.readLog(t, 99); len(lg.recs) != 0 {
		t.Fatalf("a log read after the wrong meta seq gave %d records", len(lg.recs))
	}
	other := &testLog{img: l.img, fileID: l.fileID, gen: 7} // same head page (7 mod 2), older records
	if lg := other.readLog(t, 100); len(lg.recs) != 0 {
		t.Fatal("epoch 7 read epoch 5's records")
	}
	if lg := newTestLog(6, 0, 0).readLog(t, 0); len(lg.recs) != 0 || len(lg.blocks) != 0 {
		t.Fatal("a zero head page is not an empty log")
	}
}

// TestNativeLogPrefix: damage anywhere in a log of random groups leaves
// exactly the whole groups before the damaged record. Seeded: -seed.
func TestNativeLogPrefix(t *testing.T) {
	seed := uint64(testSeed(t))
	for round := range 200 {
		r := rand.New(rand.NewPCG(seed, uint64(round)))
		what := fmt.Sprintf("seed %d round %d", seed, round)
		l := newTestLog(2+r.Uint64N(9), r.Uint64N(1000), 3)
		metaSeq := l.seq
		var offs []uint64 // where each non-LINK record went
		var groupEnd []bool
		total := 1 + r.IntN(1500)
		for len(offs) < total {
			g := 1 + r.IntN(5)
			if r.IntN(20) == 0 {
				g = 1 + r.IntN(1100) // a growth group, which may run into the next block
			}
			for j := range g {
				if l.slot == l.slots-1 {
					// the record will follow a LINK
					offs = append(offs, l.blocks[0]+nativeLogHeader)
				} else {
					offs = append(offs, l.recOff())
				}
				l.put(putRec(r.Uint64N(512), j == g-1))
				groupEnd = append(groupEnd, j == g-1)
			}
		}
		whole := func(n int) int { // whole groups among the first n records
			for n > 0 && !groupEnd[n-1] {
				n--
			}
			return n
		}
		if got := len(l.readLog(t, metaSeq).recs); got != whole(len(offs)) {
			t.Fatalf("%s: undamaged log gave %d of %d records", what, got, whole(len(offs)))
		}
		k := r.IntN(len(offs))
		l.img[offs[k]+uint64(r.IntN(nativeLogRecord))] ^= byte(1 + r.IntN(255))
		if got := len(l.readLog(t, metaSeq).recs); got != whole(k) {
			t.Fatalf("%s: damage in record %d of %d: %d records read, want %d", what, k, len(offs), got, whole(k))
		}
	}
}

// TestNativeLogLinks: a LINK that does not lead to this epoch's next
// block ends the log there, and a record where only a LINK belongs too.
func TestNativeLogLinks(t *testing.T) {
	build := func() (*testLog, uint64) {
		l := newTestLog(3, 10, 1)
		for range 70 {
			l.put(putRec(1, true))
		}
		return l, l.writtenBlock[0]
	}
	l, blk := build()
	h := nativeLogBlock{fileID: l.fileID, epoch: 1, index: 1}
	h.encode(l.img[blk:]) // a header of an older epoch
	if lg := l.readLog(t, 10); len(lg.recs) != 62 || !slices.Equal(lg.blocks, []uint64{blk}) {
		t.Fatalf("stale block header: %d records, blocks %x", len(lg.recs), lg.blocks)
	}
	l, blk = build()
	h = nativeLogBlock{fileID: l.fileID, epoch: 3, index: 2}
	h.encode(l.img[blk:])
	if lg := l.readLog(t, 10); len(lg.recs) != 62 {
		t.Fatalf("wrong block index: %d records", len(lg.recs))
	}
	l, _ = build()
	link := nativeLogRec{epoch: 3, seq: 10 + 63, typ: recLink, entry: testLogBase + 8192} // not a 64 KiB block
	link.encode(l.img[nativeLogHead(3)+nativeLogHeader+62*nativeLogRecord:])
	if lg := l.readLog(t, 10); len(lg.recs) != 62 || len(lg.blocks) != 0 {
		t.Fatalf("misaligned LINK: %d records, blocks %x", len(lg.recs), lg.blocks)
	}
	l, _ = build()
	rec := putRec(1, true)
	rec.epoch, rec.seq = 3, 10+63
	rec.encode(l.img[nativeLogHead(3)+nativeLogHeader+62*nativeLogRecord:])
	if lg := l.readLog(t, 10); len(lg.recs) != 62 {
		t.Fatalf("a PUT in the LINK's place: %d records", len(lg.recs))
	}
	l = newTestLog(3, 10, 0)
	l.put(putRec(1, true))
	l.write(nativeLogRec{typ: recLink, entry: testLogBase}) // a LINK before the last slot
	l.put(putRec(2, true))
	if lg := l.readLog(t, 10); len(lg.recs) != 1 {
		t.Fatalf("an early LINK: %d records", len(lg.recs))
	}
}

func TestNativeReplayLength(t *testing.T) {
	// groups: [0] [1 2] [3] [4 5 6] [7]
	slots := []uint64{5, 6, 7, 5, 8, 9, 5, 6}
	ends := []bool{true, false, true, true, false, false, true, true}
	recs := make([]nativeLogRec, len(slots))
	for i := range recs {
		recs[i] = putRec(slots[i], ends[i])
	}
	recs[7].typ, recs[7].entry, recs[7].bsum = recEmpty, 0, 0
	run := func(bad ...int) (int, []int) {
		var calls []int
		n := nativeReplayLength(recs, func(i int) bool {
			calls = append(calls, i)
			return !slices.Contains(bad, i)
		})
		slices.Sort(calls)
		return n, calls
	}
	if n, calls := run(); n != 8 || !slices.Equal(calls, []int{2, 4, 5, 6}) {
		t.Fatalf("all sound: %d, verified %v", n, calls)
	}
	// Slot 5's last PUT (6) fails: cut before its group [4 5 6]; slot 5's
	// candidate is then record 3, and slot 6's is record 1.
	if n, calls := run(6); n != 4 || !slices.Equal(calls, []int{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("record 6 bad: %d, verified %v", n, calls)
	}
	if n, _ := run(6, 3); n != 3 {
		t.Fatalf("records 6 and 3 bad: %d", n)
	}
	if n, _ := run(6, 3, 0); n != 0 {
		t.Fatalf("records 6, 3 and 0 bad: %d", n)
	}
}

func TestNativeApplyLog(t *testing.T) {
	m := nativeMeta{next: 512, m: 512, n: 0, noObjects: 3, noKeys: 2, seq: 40}
	recs := []nativeLogRec{
		{seq: 41, typ: recPut, slot: 7, entry: 0x150302, dObj: 1, dKeys: 1},
		{seq: 42, typ: recGrow, slot: 1024, entry: 1024},
		{seq: 43, typ: recPut, slot: 700, entry: 0x160302, dObj: 1},
		{seq: 44, typ: recGrow, slot: 1536, entry: 1024},
		{seq: 45, typ: recEmpty, slot: 7, dObj: -2, dKeys: -1},
	}
	st, err := applyNativeLog("f", recs, &m, 1<<32)
	if err != nil {
		t.Fatal(err)
	}
	if st.next != 1536 || st.m != 1024 || st.n != 512 || st.noObjects != 3 || st.noKeys != 2 || st.seq != 45 ||
		len(st.entries) != 2 || st.entries[7] != 0 || st.entries[700] != 0x160302 {
		t.Fatalf("%+v", st)
	}
	for name, bad := range map[string]nativeLogRec{
		"slot past next":   {seq: 41, typ: recPut, slot: 512, entry: 0x150302},
		"GROW skips":       {seq: 41, typ: recGrow, slot: 1536, entry: 1024},
		"GROW wrong M":     {seq: 41, typ: recGrow, slot: 1024, entry: 512},
		"GROW past max":    {seq: 41, typ: recGrow, slot: 1024, entry: 1024},
		"objects below 0":  {seq: 41, typ: recEmpty, slot: 1, dObj: -4, dKeys: -1},
		"keys above objs":  {seq: 41, typ: recPut, slot: 1, entry: 0x150302, dKeys: 2},
		"LINK in a replay": {seq: 41, typ: recLink, entry: 0x30000},
	} {
		max := uint64(1 << 32)
		if name == "GROW past max" {
			max = 512
		}
		if _, err := applyNativeLog("f", []nativeLogRec{bad}, &m, max); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNativeVerifyPut: a replay candidate passes only with its own bucket,
// in space the last checkpoint left free or quarantined.
func TestNativeVerifyPut(t *testing.T) {
	a := newNativeAlloc("f", nativeBase)
	alloc := func(size uint64) nativeEntry {
		e, err := a.alloc(size)
		must(t, err)
		return e
	}
	e1, e2, e5 := alloc(100), alloc(100), alloc(100)
	e3, e4, e6 := alloc(5000), alloc(5000), alloc(5000)
	must(t, a.release(e2))
	must(t, a.release(e4))
	must(t, a.checkpoint())
	must(t, a.checkpoint())
	must(t, a.release(e1))
	must(t, a.release(e3))
	must(t, a.checkpoint())
	end := a.dataEnd()
	rec, err := a.encodeFree(nil, end)
	must(t, err)
	b, err := decodeNativeFree("f", rec, 0, nativeNodeSum(rec), nativeBase, end)
	must(t, err)
	for _, c := range []struct {
		name string
		e    nativeEntry
		ok   bool
	}{
		{"free cell", e2, true}, {"quarantined cell", e1, true}, {"live cell", e5, false},
		{"free block", e4, true}, {"quarantined block", e3, true}, {"live block", e6, false},
		{"past the data end", nativeBlockEntry(nativeBase+((end-nativeBase)>>20+1)<<20, 20), true},
		{"a block around a live one", nativeBlockEntry(e6.off()&^(1<<16-1), 16), false},
		{"a cell of another class", nativeCellEntry(e1.off(), e1.cellClass()+1), false},
		{"empty", 0, false},
	} {
		if got := b.available(c.e); got != c.ok {
			t.Errorf("%s %v: available %v", c.name, c.e, got)
		}
	}

	obj := appendNativeObject(nil, []byte{131, 104, 2, 97, 7, 97, 8}, 0)
	kenc := keySpan(obj[9:], 1)
	slot := uint32(nativeKeyHash(kenc) & 511)
	bucket := func(seq uint64, slot uint32, body []byte) ([]byte, uint64) {
		h := nativeBucketHead{seq: seq, slot: slot, level: 9, size: uint64(32 + len(body))}
		bb := make([]byte, 32)
		h.encode(bb)
		bb = append(bb, body...)
		return bb, nativeBucketSum(nativeRevision, bb)
	}
	good, sum := bucket(50, slot, obj)
	put := nativeLogRec{epoch: 1, seq: 50, typ: recPut, slot: uint64(slot), entry: uint64(e1), bsum: sum}
	if err := verifyNativePut("f", nativeRevision, &put, good, 1, b); err != nil {
		t.Fatalf("the record's own bucket: %v", err)
	}
	other, otherSum := bucket(49, slot, obj) // an older version of the slot
	damaged := bytes.Clone(good)
	damaged[len(damaged)-1] ^= 1
	for name, c := range map[string]struct {
		r nativeLogRec
		b []byte
	}{
		"older bucket":         {put, other},
		"older bucket's bsum":  {func() nativeLogRec { r := put; r.bsum = otherSum; return r }(), good},
		"other slot":           {func() nativeLogRec { r := put; r.slot++; return r }(), good},
		"damaged object":       {put, damaged},
		"in a live cell":       {func() nativeLogRec { r := put; r.entry = uint64(e5); return r }(), good},
		"bucket past its cell": {func() nativeLogRec { r := put; r.entry = uint64(nativeCellEntry(e1.off(), 1)); return r }(), good},
	} {
		if err := verifyNativePut("f", nativeRevision, &c.r, c.b, 1, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
