package dets

import (
	"errors"
	"fmt"
	"slices"

	"github.com/godets/godets/etf"
)

// Linear hashing (docs/format-otp9.md §6): the table grows one 256-slot segment at a time.

// maybeGrow adds segments while there are more keys than keysPerSlot
// times the slots (otp9: OTP's goal slots >= keys, reached eagerly here;
// native: two keys a slot, docs/format-native.md §5.3) and the maximum
// allows. Tables never shrink here, in either format, as OTP's do not.
// While a traversal runs the table does not grow, as OTP's does not while
// it is fixed; the writes after the last traversal ends catch up, at most
// maxGrowSteps segments each (a batch of inserts needs one), so that a
// long traversal's postponed splits are spread over several writes
// instead of stalling one.
func (t *Table) maybeGrow() error {
	if t.fixed > 0 {
		return nil // a split would move objects under a traversal (fixTraversal)
	}
	for steps := 0; steps < maxGrowSteps && t.h.noKeys > uint64(t.lay.keysPerSlot)*t.h.next && t.h.next < t.h.maxSlots; steps++ {
		grow := t.grow
		if t.lay.tag == tagNative {
			grow = t.nativeGrow
		}
		if err := grow(); err != nil {
			if errors.Is(err, ErrFileTooLarge) && !errors.Is(err, errInconsistent) {
				return nil // no room for a segment: stay at this size
			}
			return err
		}
	}
	return nil
}

// maxGrowSteps bounds the segments one maybeGrow adds.
const maxGrowSteps = 64

// grow allocates segment Next/256 (and a new segment-array part when the
// segment starts one), then splits old slots N..N+255: a key of slot i whose
// phash2 has the M bit set moves to slot i+M. Object order within each key
// is kept.
func (t *Table) grow() error {
	seg := int(t.h.next / slotsPerSeg)
	// Allocate first: a full file (ErrFileTooLarge) just stops the growth.
	partAddr := int64(-1)
	if seg%segsPerPart == 0 {
		a, err := t.bud.alloc(partSize)
		if err == nil {
			err = t.vetFileFree(a, partSize)
		}
		if err != nil {
			return err
		}
		partAddr = a
	}
	segAddr, err := t.bud.alloc(segmentSize)
	if err == nil {
		err = t.vetFileFree(segAddr, segmentSize)
	}
	if err != nil {
		if partAddr >= 0 {
			t.bud.freeBlock(partAddr, partSize)
		}
		return err
	}
	if err := t.growAt(seg, partAddr, segAddr); err != nil {
		if errors.Is(err, errInconsistent) {
			return err
		}
		// growAt wrote nothing and gave its blocks back.
		t.bud.freeBlock(segAddr, segmentSize)
		if partAddr >= 0 {
			t.bud.freeBlock(partAddr, partSize)
		}
		if errors.Is(err, ErrFileTooLarge) {
			return err
		}
		return fmt.Errorf("%w: %w", errInconsistent, err)
	}
	return nil
}

// errInconsistent marks an error after which the in-memory state may not
// match the file; it puts the table in error mode whatever it wraps (see
// fail), a read error or ErrFileTooLarge too.
var errInconsistent = errors.New("dets: table state left inconsistent")

// growAt splits the 256 slots of segment N/256 into themselves and the new
// segment seg, working on raw buckets (keys are hashed from their
// encodings; nothing is decoded). The writes go in phases so that a crash
// between any two of them never loses an object (a repair scan finds every
// ACTIVE bucket):
//
//  1. new blocks: split-off buckets, the rewritten buckets of the keys that
//     stay (never rewritten in place), the new segment (with its entries)
//     and a new part, none referenced yet;
//  2. the pointer to the new segment (or part), then the old segment's
//     entries in one write;
//  3. FREE marks on the blocks no slot uses any more.
//
// A bucket whose keys all move is not rewritten: the new slot takes over its
// block. Within a phase, adjacent writes are merged.
//
// Every block is allocated before anything is written or the cached
// segment changes: when one cannot be (a full file), growAt gives the
// others back and returns the error unwrapped, and the table stays as it
// was. An error once writing has begun wraps errInconsistent.
func (t *Table) growAt(seg int, partAddr, segAddr int64) error {
	m, n := t.h.m, t.h.n
	oldSeg := n / slotsPerSeg
	olds, err := t.segment(oldSeg)
	if err != nil {
		return err
	}
	t.touchBuckets(olds[:])
	news := new([slotsPerSeg]slotWord)
	sc := getScratch()
	defer putScratch(sc)
	fresh := &sc.fresh
	fresh.reset()
	freed := sc.freed[:0] // at most a segment's worth, kept for reuse
	grown := sc.grown[:0]
	undo := func(err error) error {
		for i := len(grown) - 1; i >= 0; i-- {
			t.bud.freeBlock(grown[i].ptr, grown[i].size)
		}
		return err
	}
	work := *olds // the cache takes it once every block is allocated
	oldChanged := false
	single := t.splitHashesOf(olds, &sc.split)
	for j := range slotsPerSeg {
		e := t.entryOf(work[j])
		if e.size == 0 {
			continue
		}
		if h, ok := single.hash(j); ok {
			// One object: it stays, or its bucket moves whole.
			if h&(2*m-1) >= m {
				news[j], work[j] = work[j], 0
				oldChanged = true
			}
			continue
		}
		gs, _, err := t.readRawInto(n+uint64(j), sc)
		if err != nil {
			return undo(err)
		}
		keep, move := sc.keep[:0], sc.move[:0]
		for k := range gs {
			h, err := t.hashGroup(&gs[k])
			if err != nil {
				return undo(err)
			}
			if h&(2*m-1) >= m {
				move = append(move, gs[k])
			} else {
				keep = append(keep, gs[k])
			}
		}
		sc.keep, sc.move = keep, move
		switch {
		case len(move) == 0:
			continue
		case len(keep) == 0:
			news[j], work[j] = work[j], 0
			oldChanged = true
			continue
		}
		size := t.encodedSize(move)
		if size > 1<<31 {
			return undo(ErrFileTooLarge)
		}
		ptr, err := t.bud.alloc(size)
		if err != nil {
			return undo(fmt.Errorf("%w: %s", err, t.path))
		}
		if err := t.vetFileFree(ptr, blockSize(buddyClass(size))); err != nil {
			return undo(err)
		}
		grown = append(grown, slotEntry{size, ptr})
		fresh.appendBucket(t, ptr, n+uint64(j)+m, move)
		news[j] = t.wordOf(slotEntry{size, ptr})

		// The kept keys move too (see writeGroups: no live bucket is
		// rewritten in place).
		size = t.encodedSize(keep)
		ptr, err = t.bud.alloc(size)
		if err != nil {
			return undo(fmt.Errorf("%w: %s", err, t.path))
		}
		if err := t.vetFileFree(ptr, blockSize(buddyClass(size))); err != nil {
			return undo(err)
		}
		grown = append(grown, slotEntry{size, ptr})
		fresh.appendBucket(t, ptr, n+uint64(j), keep)
		work[j] = t.wordOf(slotEntry{size, ptr})
		freed = append(freed, e)
		oldChanged = true
	}

	sc.freed, sc.grown = freed, grown
	for _, g := range grown {
		t.h.counters[counterIndex(g.size)]++
	}
	*olds = work
	broken := func(err error) error { return fmt.Errorf("%w: %w", errInconsistent, err) }

	// Phase 1: the new segment, and the part pointing to it when new.
	fresh.add(segAddr, t.appendEntries(fresh.scratch(segmentSize), news))
	var ptrOff int64
	if partAddr >= 0 {
		p := seg / segsPerPart
		part := fresh.scratch(partSize)[:partSize]
		clear(part)
		be.PutUint32(part[4*(seg%segsPerPart):], uint32(segAddr))
		fresh.add(partAddr, part)
		ptrOff = partTableOff + 4*int64(p)
	} else {
		ptrOff = int64(t.parts[seg/segsPerPart]) + 4*int64(seg%segsPerPart)
	}
	if err := t.flush(fresh); err != nil {
		return broken(err)
	}
	var b [4]byte
	if partAddr >= 0 {
		be.PutUint32(b[:], uint32(partAddr))
		t.parts[seg/segsPerPart] = uint32(partAddr)
	} else {
		be.PutUint32(b[:], uint32(segAddr))
	}
	if err := t.writeAt(b[:], ptrOff); err != nil {
		return broken(err)
	}
	t.segs = append(t.segs, segAddr)
	t.segCache = append(t.segCache, news)
	if oldChanged {
		var sb [segmentSize]byte
		if err := t.writeAt(t.appendEntries(sb[:0], olds), t.segs[oldSeg]); err != nil {
			return broken(err)
		}
	}
	for _, e := range freed {
		if err := t.freeBucket(e); err != nil {
			return broken(err)
		}
	}
	if n+slotsPerSeg == m {
		t.h.n, t.h.m = 0, 2*m
	} else {
		t.h.n += slotsPerSeg
	}
	t.h.next += slotsPerSeg
	return nil
}

// splitHashesOf is singleKeyHashes, unless the table's tuning turns the
// in-place path off (tests compare a split with and without it).
func (t *Table) splitHashesOf(ws *[slotsPerSeg]slotWord, s *splitHashes) *splitHashes {
	if t.tune.noSplitInPlace {
		return nil
	}
	got := t.singleKeyHashes(ws, s)
	if f := t.tune.splitInPlace; f != nil && got != nil {
		f(got)
	}
	return got
}

// splitHashes are the key hashes of a segment's one-object buckets that
// singleKeyHashes could read in place: bit j of ok says hs[j] is slot j's.
type splitHashes struct {
	hs [slotsPerSeg]uint32
	ok [slotsPerSeg / 64]uint64
}

func (s *splitHashes) hash(j int) (uint64, bool) {
	if s == nil || s.ok[j/64]&(1<<(j%64)) == 0 {
		return 0, false
	}
	return uint64(s.hs[j]), true
}

// singleKeyHashes finds, for a set keyed on a binary in position 1 (the
// bench workload and the commonest dets table), the buckets of ws that
// hold a single object, and hashes their keys straight from the map: a
// split only needs that hash to keep such a bucket or move it whole, so
// it need not copy and parse the bucket (the split's bucket reads were a
// third of its time in the insert profile). It checks what readBucket
// would before trusting a bucket (its size word, the ACTIVE status, the
// object record filling it, the key's bytes); any other bucket, and every
// bucket after a fault of the map, is left to readRawInto, which reports
// what is wrong. It returns nil when it cannot help (no map, another
// kind or key position).
func (t *Table) singleKeyHashes(ws *[slotsPerSeg]slotWord, s *splitHashes) *splitHashes {
	if t.mm == nil || t.kind != Set || t.keyPos != 1 || t.lay.tag != tagOTP9 {
		return nil
	}
	*s = splitHashes{}
	limit := min(t.size, t.fileEnd, int64(len(t.mm)))
	if !mapCopyFunc(func() {
		for j := range ws {
			e := t.entryOf(ws[j])
			const rec = bucketHeaderSize + 4 // the header and one ObjSz word
			if e.size <= rec || e.ptr < baseAddr || e.ptr+e.size > limit {
				continue
			}
			b := t.mm[e.ptr : e.ptr+e.size : e.ptr+e.size]
			if int64(be.Uint32(b)) != e.size || be.Uint32(b[4:]) != statusActive ||
				int64(be.Uint32(b[bucketHeaderSize:])) != e.size-bucketHeaderSize {
				continue
			}
			k, ok := leadingBinary(b[rec:])
			if !ok {
				continue
			}
			h, ok := encodings.Phash2Body(k)
			if !ok {
				continue
			}
			s.hs[j] = h
			s.ok[j/64] |= 1 << (j % 64)
		}
	}) {
		return nil // a page vanished: readRawInto reports it
	}
	return s
}

// groupHash returns the phash2 of g's key, from its encoding when it can.
func groupHash(g *group, keyPos int) (uint64, error) {
	if g.kenc != nil {
		if h, ok := encodings.Phash2Body(g.kenc); ok {
			return uint64(h), nil
		}
	}
	k, err := g.keyTerm(keyPos)
	if err != nil {
		return 0, err
	}
	return uint64(hashTerm(k)), nil
}

// appendEntries appends the on-disk form of a page of slot entries.
func (t *Table) appendEntries(dst []byte, ws *[slotsPerSeg]slotWord) []byte {
	for _, w := range ws {
		dst = t.appendWord(dst, w)
	}
	return dst
}

// writeBatch collects writes that may go to the file in any order; flush
// merges those that touch end to end into one write.
type writeBatch struct {
	buf []byte
	ws  []pendingWrite
}

type pendingWrite struct {
	off    int64
	lo, hi int  // the bytes, buf[lo:hi]
	bucket bool // a complete bucket (see writeBucket)
}

func (w *writeBatch) reset() { w.buf, w.ws = w.buf[:0], w.ws[:0] }

// scratch returns an empty slice at the end of w.buf with room for n bytes,
// to be filled and passed to add.
func (w *writeBatch) scratch(n int) []byte {
	w.buf = slices.Grow(w.buf, n)
	return w.buf[len(w.buf):len(w.buf):cap(w.buf)]
}

// add queues b for offset off; b may be a slice returned by scratch.
func (w *writeBatch) add(off int64, b []byte) {
	lo := len(w.buf)
	if len(b) > 0 && cap(w.buf) > lo && &w.buf[:lo+1][lo] == &b[0] {
		w.buf = w.buf[:lo+len(b)] // filled in place
	} else {
		w.buf = append(w.buf, b...)
	}
	w.ws = append(w.ws, pendingWrite{off, lo, len(w.buf), false})
}

// appendBucket queues the bucket of t that holds gs as the content of
// slot, for offset off.
func (w *writeBatch) appendBucket(t *Table, off int64, slot uint64, gs []group) {
	lo := len(w.buf)
	w.buf = t.encodeBucket(w.buf, slot, gs)
	w.ws = append(w.ws, pendingWrite{off, lo, len(w.buf), true})
}

// flush writes w's data, merging adjacent writes, and empties w. Each
// bucket a kill could tear inside the merged write goes out FREE, and its
// ACTIVE word is written once all the data is (writeBucket's order).
func (t *Table) flush(w *writeBatch) error {
	slices.SortFunc(w.ws, func(a, b pendingWrite) int { return cmpInt64(a.off, b.off) })
	var run []byte
	defer w.reset()
	late := false
	for i := range w.ws {
		p := &w.ws[i]
		if p.bucket && t.tearable(p.off, int64(p.hi-p.lo)) {
			be.PutUint32(w.buf[p.lo+4:], statusFree)
			late = true
		} else {
			p.bucket = false
		}
	}
	for i := 0; i < len(w.ws); {
		p := w.ws[i]
		j := i + 1
		end := p.off + int64(p.hi-p.lo)
		for j < len(w.ws) && w.ws[j].off == end {
			end += int64(w.ws[j].hi - w.ws[j].lo)
			j++
		}
		data := w.buf[p.lo:p.hi]
		if j > i+1 {
			run = run[:0]
			for _, q := range w.ws[i:j] {
				run = append(run, w.buf[q.lo:q.hi]...)
			}
			data = run
		}
		if err := t.writeAt(data, p.off); err != nil {
			return err
		}
		i = j
	}
	if !late {
		return nil
	}
	active := t.small[:4]
	be.PutUint32(active, statusActive)
	for _, p := range w.ws {
		if p.bucket {
			if err := t.writeAt(active, p.off+4); err != nil {
				return err
			}
		}
	}
	return nil
}

// keyHash returns the phash2 of a key.
func keyHash(k etf.Term) uint64 { return uint64(hashTerm(k)) }

// fixTraversal marks a traversal under way until unfixTraversal: growth
// waits for it (maybeGrow), because a split moves objects from the slots
// behind the traversal to slots ahead of it, where it would see them
// again. OTP fixes a table for foldl, select and match the same way
// (safe_fixtable), and does not grow a fixed table.
func (t *Table) fixTraversal() {
	t.mu.Lock()
	t.fixed++
	t.mu.Unlock()
}

func (t *Table) unfixTraversal() {
	t.mu.Lock()
	t.fixed--
	t.mu.Unlock()
}
