package dets

import (
	"crypto/rand"
	"fmt"
	"maps"
	"math/bits"
	"slices"
)

// nativeBuilder writes a new, closed native table into a file, from the
// buckets of its slots given in ascending slot order (docs/format-native.md
// §12.4): the superblock, meta A of generation 1 (verifiedGen 1), empty log
// heads, a packed tree, the buckets in runs filled class by class, and the
// free record. Repair uses it; it is also the writer for any other whole
// rebuild (InitTable, conversion): newNativeBuilder, addBucket per slot,
// finish.
//
// It streams: the heap holds one 64 KiB buffer per cell class with a run
// being filled (at most 55), the segment and part being filled and the
// root's entries (16 bytes a part), whatever the table's size. Space comes
// from a fresh nativeAlloc, so the free record is the allocator's own
// encoding of what the build left free.
type nativeBuilder struct {
	f          File
	path       string
	super      nativeSuper
	m, n, next uint64
	level      uint8 // log2(M): the level of slots at or above N
	seq        uint64
	a          *nativeAlloc

	runs map[uint64][]byte // runs being filled: offset -> their bytes so far
	pool [][]byte          // run buffers to reuse

	seg     [nativeSlotsPerSeg]nativeEntry
	segNo   uint64 // the segment seg holds
	part    [nativeSegsPerPart]nativeChild
	parts   []nativeChild
	page    []byte // one 4 KiB node
	buf     []byte // one bucket
	started bool
	last    uint64 // the last slot given

	objects, keys uint64
}

// newNativeBuilder prepares the build of a table of next slots (a multiple
// of 512 within the superblock's bounds) into f, which must be empty. The
// superblock s gives kind, key position, base and slot bounds; it gets a
// new file ID. Buckets get sequence numbers from seqAfter+1 on, so that
// none ranks below a bucket of an older file (§8).
func newNativeBuilder(f File, path string, s nativeSuper, next, seqAfter uint64) (*nativeBuilder, error) {
	if next < nativeSlotsPerSeg || next%nativeSlotsPerSeg != 0 || next < s.minSlots || next > s.maxSlots {
		return nil, fmt.Errorf("dets: native build of %d slots within [%d, %d]", next, s.minSlots, s.maxSlots)
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	// A new file, of the current revision whatever the source's (the
	// revisions differ in the log only, which a new file does not have).
	s.fileID, s.revision = le.Uint64(id[:]), nativeRevision
	m, n := hashParamsFor(next)
	b := &nativeBuilder{f: f, path: path, super: s, m: m, n: n, next: next,
		level: uint8(bits.TrailingZeros64(m)), seq: seqAfter, a: newNativeAlloc(path, s.base),
		runs: map[uint64][]byte{}, page: make([]byte, nativePageSize)}
	return b, nil
}

// slotLevel is the level of slot's bucket in the new table (§9).
func (b *nativeBuilder) slotLevel(slot uint64) uint8 {
	if slot < b.n || slot >= b.m {
		return b.level + 1
	}
	return b.level
}

// addBucket writes the bucket of slot, holding gs (key groups in bucket
// order, at least one), after the slots given before.
func (b *nativeBuilder) addBucket(slot uint64, gs []group) error {
	if slot >= b.next || (b.started && slot <= b.last) || len(gs) == 0 {
		return fmt.Errorf("dets: native build: slot %d after %d (%d slots)", slot, b.last, b.next)
	}
	b.started, b.last = true, slot
	if err := b.fillSegments(slot / nativeSlotsPerSeg); err != nil {
		return err
	}
	size, nobj := nativeBucketSize(gs)
	b.seq++
	h := nativeBucketHead{seq: b.seq, slot: uint32(slot), level: b.slotLevel(slot), size: size}
	buf := encodeNativeBucket(b.buf, h, gs)
	b.buf = buf
	e, err := b.a.alloc(size)
	if err != nil {
		return fmt.Errorf("%w: %s", err, b.path)
	}
	if err := b.place(e, buf); err != nil {
		return err
	}
	b.seg[slot%nativeSlotsPerSeg] = e
	b.objects += uint64(nobj)
	b.keys += uint64(len(gs))
	return nil
}

// place puts a bucket's bytes where its entry says: a cell goes into its
// run's buffer, written once the run is full (cells are taken in order, so
// the last cell fills it); a block is written at once.
func (b *nativeBuilder) place(e nativeEntry, bucket []byte) error {
	off := e.off()
	c := e.cellClass()
	if c == 0 {
		return b.write(bucket, off)
	}
	run := b.super.base + (off-b.super.base)&^(nativeRunSize-1)
	rb, ok := b.runs[run]
	if !ok {
		if n := len(b.pool); n > 0 {
			rb, b.pool = b.pool[n-1][:0], b.pool[:n-1]
		} else {
			rb = make([]byte, 0, nativeRunSize)
		}
	}
	at := int(off - run)
	rb = rb[:at+int(cellSize(c))]
	copy(rb[at:], bucket)
	clear(rb[at+len(bucket):])
	if uint64(at)/cellSize(c) < uint64(cellsInRun(c))-1 {
		b.runs[run] = rb
		return nil
	}
	delete(b.runs, run)
	b.pool = append(b.pool, rb)
	return b.write(rb, run)
}

func (b *nativeBuilder) write(p []byte, off uint64) error {
	_, err := b.f.WriteAt(p, int64(off))
	return err
}

// fillSegments writes the segments before segment upto, the one being
// filled first.
func (b *nativeBuilder) fillSegments(upto uint64) error {
	for b.segNo < upto {
		if err := b.flushSegment(); err != nil {
			return err
		}
	}
	return nil
}

// flushSegment writes the segment being filled into a block of its own,
// enters it in its part, and writes the part when it is complete.
func (b *nativeBuilder) flushSegment() error {
	off, err := b.a.allocBlock(nativeMinBuddyClass)
	if err != nil {
		return fmt.Errorf("%w: %s", err, b.path)
	}
	sum := encodeNativeSegment(b.page, &b.seg)
	if err := b.write(b.page, off); err != nil {
		return err
	}
	clear(b.seg[:])
	b.part[b.segNo%nativeSegsPerPart] = nativeChild{off, sum}
	b.segNo++
	if b.segNo%nativeSegsPerPart == 0 || b.segNo == b.next/nativeSlotsPerSeg {
		used := (b.segNo-1)%nativeSegsPerPart + 1
		poff, err := b.a.allocBlock(nativeMinBuddyClass)
		if err != nil {
			return fmt.Errorf("%w: %s", err, b.path)
		}
		psum := encodeNativePart(b.page, b.part[:used])
		if err := b.write(b.page, poff); err != nil {
			return err
		}
		clear(b.part[:])
		b.parts = append(b.parts, nativeChild{poff, psum})
	}
	return nil
}

// finish writes what is left: the remaining segments and parts, the runs
// still being filled, the root, the free record, and the header pages with
// meta A; the file ends at the meta's dataEnd. It does not fsync.
func (b *nativeBuilder) finish() (nativeMeta, error) {
	var m nativeMeta
	if err := b.fillSegments(b.next / nativeSlotsPerSeg); err != nil {
		return m, err
	}
	for _, run := range slices.Sorted(maps.Keys(b.runs)) {
		if err := b.write(b.runs[run], run); err != nil {
			return m, err
		}
	}
	clear(b.runs)
	a := b.a
	m = nativeMeta{fileID: b.super.fileID, gen: 1, seq: b.seq, next: b.next, m: b.m, n: b.n,
		noObjects: b.objects, noKeys: b.keys, rootLen: nativeRootLen(b.next), verifiedGen: 1, flags: metaFlagClose}
	var err error
	if m.rootOff, err = a.allocBlock(blockClassFor(m.rootLen)); err != nil {
		return m, fmt.Errorf("%w: %s", err, b.path)
	}
	root := make([]byte, m.rootLen)
	m.rootSum = encodeNativeRoot(root, b.parts)
	if err := b.write(root, m.rootOff); err != nil {
		return m, err
	}
	// The free record's block is the smallest that holds the record
	// (§7.5): allocated by a bound, then fitted as a checkpoint does.
	fk := blockClassFor(a.freeRecordBound())
	if m.freeOff, err = a.allocBlock(fk); err != nil {
		return m, fmt.Errorf("%w: %s", err, b.path)
	}
	rec, err := a.encodeFree(nil, a.dataEnd())
	if err != nil {
		return m, err
	}
	if rec, _, m.dataEnd, err = a.fitFreeRecord(rec, m.freeOff, fk); err != nil {
		return m, err
	}
	m.freeLen, m.freeSum = uint64(len(rec)), nativeNodeSum(rec)
	if err := b.write(rec, m.freeOff); err != nil {
		return m, err
	}
	hdr := make([]byte, 2*nativePageSize)
	b.super.encode(hdr[nativeSuperOff:])
	m.encode(hdr[nativeMetaAOff:])
	if err := b.write(hdr, 0); err != nil {
		return m, err
	}
	if err := b.f.Truncate(int64(m.dataEnd)); err != nil {
		return m, err
	}
	return m, nil
}

// fitFreeRecord shrinks the free record's block, at off and of class k,
// to blockClassFor of the record's length: the block the next checkpoint
// releases, by the meta's freeLen (§7.5). It returns the record encoded
// anew, the block's class and the end of data. Upper halves go back while
// the record, with the one more free entry each of them takes, fits the
// lower half. A record of exactly half its block cannot shrink so; it
// would keep its block whole while freeLen names only the lower half, and
// the upper half would be lost to every later checkpoint (Check's
// LeakedBytes). Then one free block below the end of data is listed as
// its two halves instead: one entry more, and the record needs the whole
// block. Buddies listed apart are legal; they merge when one of them is
// next freed.
func (a *nativeAlloc) fitFreeRecord(rec []byte, off uint64, k int) ([]byte, int, uint64, error) {
	dataEnd := a.dataEnd()
	var err error
	for k > nativeMinBuddyClass && uint64(len(rec))+8 <= 1<<(k-1) {
		k--
		a.insertFree(k, off+1<<k)
		dataEnd = a.dataEnd()
		if rec, err = a.encodeFree(rec[:0], dataEnd); err != nil {
			return nil, 0, 0, err
		}
	}
	if k > nativeMinBuddyClass && blockClassFor(uint64(len(rec))) < k && a.listHalves(dataEnd) {
		if rec, err = a.encodeFree(rec[:0], dataEnd); err != nil {
			return nil, 0, 0, err
		}
	}
	return rec, k, dataEnd, nil
}

// listHalves replaces the lowest free block of the smallest class above
// the minimum that lies below dataEnd by its two halves, without merging
// them; false when there is none.
func (a *nativeAlloc) listHalves(dataEnd uint64) bool {
	for k := nativeMinBuddyClass + 1; k <= nativeMaxBuddyClass; k++ {
		if l := a.free[k]; len(l) > 0 && l[0]+1<<k <= dataEnd {
			a.free[k] = l[1:]
			a.free[k-1] = insertSorted(insertSorted(a.free[k-1], l[0]), l[0]+1<<(k-1))
			return true
		}
	}
	return false
}
