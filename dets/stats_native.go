package dets

import (
	"fmt"
	"math"
)

// rebuildEstimate works out Stats.CompactedSize for a native table: the
// file a rebuild (nativeBuilder, as compaction and ForceRepair run it)
// would write, laid out by the builder's own allocator with no file.
//
// When the table is small enough (tuning.statsExactCells), the walk adds
// each object's record bytes into a cell of the key hash's low bits, fine
// enough for any slot count the rebuild may choose, and feeds the key
// hashes to the same sketch as the repair's scan, so that it picks the
// rebuild's slot count (repairPlan.nativeSizeSlots) and lays out its very
// buckets: on a small table the cell classes in use, a 64 KiB run each at
// least, are most of the file. A larger table is laid out from its
// buckets as they are now, in slot order, which is close at that size (a
// run's unused tail is small against the file).
type rebuildEstimate struct {
	base               uint64
	minSlots, maxSlots uint64
	fine               []uint32 // exact: record bytes by key hash & (len-1)
	cell               uint64   // the current key's cell of fine
	sketch             hll

	a       *nativeAlloc
	next    uint64 // the new table's slots
	segNo   uint64
	lastNew uint64
	err     error
}

// rebuildExactCells bounds the exact estimate by default
// (tuning.statsExactCells): 4 bytes a cell, 32 MiB.
const rebuildExactCells = 1 << 23

func newRebuildEstimate(t *Table) *rebuildEstimate {
	s := &t.nat.super
	r := &rebuildEstimate{base: s.base, minSlots: s.minSlots, maxSlots: s.maxSlots, a: newNativeAlloc("", s.base)}
	// Twice the keys bounds what the sketch can say; the rebuild's m is
	// at most the largest power of two in its slots, so its slot of a
	// key depends on the hash's low log2(2m) bits only.
	m, _ := hashParamsFor(nativeNextForKeys(2*int64(t.h.noKeys)+2*nativeSlotsPerSeg, s.minSlots, s.maxSlots))
	if cells := 2 * m; cells <= t.tune.statsExactCells {
		r.fine = make([]uint32, cells)
	} else {
		r.next = nativeNextForKeys(int64(t.h.noKeys), s.minSlots, s.maxSlots)
	}
	return r
}

// key starts a key of the walk (its canonical encoding).
func (r *rebuildEstimate) key(kenc []byte) {
	if r == nil || r.fine == nil {
		return
	}
	h := nativeKeyHash(kenc)
	r.sketch.add(uint32(h)) // as repairPlan.emitNative
	r.cell = h & uint64(len(r.fine)-1)
}

// object adds an object of the current key, of enc bytes.
func (r *rebuildEstimate) object(enc int) {
	if r == nil || r.fine == nil {
		return
	}
	s := uint64(r.fine[r.cell]) + uint64(nativeObjectRecordSize(enc))
	r.fine[r.cell] = uint32(min(s, math.MaxUint32))
}

// current lays out a bucket of the walk as it is now (slot of next, in
// ascending order) when the estimate is not exact, at the place of the
// new table that slot's share of the slots falls on.
func (r *rebuildEstimate) current(slot, next, size uint64) {
	if r == nil || r.fine != nil || r.err != nil {
		return
	}
	s := min(uint64(float64(slot)/float64(next)*float64(r.next)), r.next-1)
	r.place(max(s, r.lastNew), size)
}

// place allocates a bucket of slot (ascending), after the segments the
// builder writes before it.
func (r *rebuildEstimate) place(slot, size uint64) {
	r.lastNew = slot
	r.segments(slot / nativeSlotsPerSeg)
	if r.err == nil {
		_, r.err = r.a.alloc(size)
	}
}

// segments takes a page for each segment before upto, and one for each
// part they complete, as nativeBuilder.flushSegment does.
func (r *rebuildEstimate) segments(upto uint64) {
	for r.segNo < upto && r.err == nil {
		_, r.err = r.a.allocBlock(nativeMinBuddyClass)
		r.segNo++
		if r.err == nil && (r.segNo%nativeSegsPerPart == 0 || r.segNo == r.next/nativeSlotsPerSeg) {
			_, r.err = r.a.allocBlock(nativeMinBuddyClass)
		}
	}
}

// size finishes the layout as nativeBuilder.finish does and returns the
// file's length; 0 when it does not fit the format.
func (r *rebuildEstimate) size() int64 {
	if r.fine != nil {
		r.exactBuckets()
	}
	r.segments(r.next / nativeSlotsPerSeg)
	a := r.a
	if r.err == nil {
		_, r.err = a.allocBlock(blockClassFor(nativeRootLen(r.next)))
	}
	fk := blockClassFor(a.freeRecordBound())
	var free uint64
	if r.err == nil {
		free, r.err = a.allocBlock(fk)
	}
	var rec []byte
	if r.err == nil {
		rec, r.err = a.encodeFree(nil, a.dataEnd())
	}
	var end uint64
	if r.err == nil {
		_, _, end, r.err = a.fitFreeRecord(rec, free, fk)
	}
	if r.err != nil {
		return 0
	}
	return int64(end)
}

// exactBuckets picks the rebuild's slot count from the sketch, as
// repairPlan.nativeSizeSlots does, folds the fine cells into its slots and
// lays out their buckets.
func (r *rebuildEstimate) exactBuckets() {
	keys := uint64(r.sketch.estimate())
	next := (keys/2 + nativeSlotsPerSeg - 1) / nativeSlotsPerSeg * nativeSlotsPerSeg
	r.next = min(max(next, r.minSlots), r.maxSlots)
	m, n := hashParamsFor(r.next)
	if 2*m > uint64(len(r.fine)) {
		r.err = fmt.Errorf("dets: estimate of %d slots from %d cells", r.next, len(r.fine))
		return
	}
	sizes := make([]uint64, r.next)
	for c, b := range r.fine {
		if b != 0 {
			sizes[slotOf(uint64(c), m, n)] += uint64(b)
		}
	}
	for slot, b := range sizes {
		if b != 0 {
			r.place(uint64(slot), nativeBucketHeader+b)
		}
	}
}
