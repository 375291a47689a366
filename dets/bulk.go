package dets

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/godets/godets/etf"
)

// bulkObject is one object fed to the bulk builder.
type bulkObject struct {
	slot uint64   // the object's slot in the new table: slotOf(phash2(key), M, N) with M, N = hashParamsFor(next)
	key  etf.Term // element keyPos of the object
	obj  object   // the object and its term_to_binary encoding
}

// bulkParams describe the table the bulk builder makes.
type bulkParams struct {
	kind               Kind
	keyPos             int
	minSlots, maxSlots uint64 // powers of two, 256 <= min <= max <= 32Mi
	next               uint64 // slots in use: a multiple of 256 in [minSlots, maxSlots]
}

func (p *bulkParams) validate() error {
	isPow2 := func(v uint64) bool { return v != 0 && v&(v-1) == 0 }
	if p.kind < Set || p.kind > DuplicateBag || p.keyPos < 1 || !isPow2(p.minSlots) || !isPow2(p.maxSlots) ||
		p.minSlots < slotsPerSeg || p.maxSlots > maxSlotsLimit || p.next%slotsPerSeg != 0 ||
		p.next < p.minSlots || p.next > p.maxSlots {
		return fmt.Errorf("%w: bulk build parameters %+v", ErrInvalidOptions, *p)
	}
	return nil
}

// nextForKeys returns the slot count a bulk build uses for nkeys keys:
// slots >= keys, within [min, max].
func nextForKeys(nkeys int64, minSlots, maxSlots uint64) uint64 {
	n := (nkeys + slotsPerSeg - 1) / slotsPerSeg * slotsPerSeg
	return uint64(min(max(n, int64(minSlots)), int64(maxSlots)))
}

// build replaces the content of t's file with a new table laid out as an
// OTP bulk build does (parts at 1336, then all segments, the buddy base
// after them), holding the objects of src, and saves it (closed properly,
// fsynced).
//
// Contract for src: objects come in ascending slot order, every slot below
// p.next; the objects of one slot come in time order, oldest first (for a
// set the last object of a key wins, for a bag the last of identical
// objects decides its position, as in Insert). Only one slot's objects are
// held in memory at a time, so src may stream from disk (a repair sorts
// objects by slot with an external sort). An error from src, a slot out
// of order or a failed write stops the build and is returned; the file is
// then left marked not closed, and the error marks the table inconsistent
// (errInconsistent): the old content is gone and the counts run ahead of
// the buckets written, so the table must not be saved as closed.
//
// t needs f, path, kind and keyPos set; the rest of its state is rebuilt.
func (t *Table) build(p bulkParams, src iter.Seq2[bulkObject, error]) error {
	if err := p.validate(); err != nil {
		return err
	}
	if t.kind != p.kind || t.keyPos != p.keyPos {
		// Only a new table's: InitTable reads them unlocked meanwhile.
		t.kind, t.keyPos = p.kind, p.keyPos
	}
	if err := t.initLayout(p.minSlots, p.maxSlots, p.next); err != nil {
		return err
	}
	if err := t.buildSlots(p, src); err != nil {
		return fmt.Errorf("%w: %w", errInconsistent, err)
	}
	return t.save(true)
}

// buildSlots is build's writing of the buckets, after its new layout.
func (t *Table) buildSlots(p bulkParams, src iter.Seq2[bulkObject, error]) error {
	var gs []group
	cur := uint64(0)
	have := false
	flush := func() error {
		if len(gs) == 0 {
			return nil
		}
		err := t.writeSlot(cur, slotEntry{}, gs)
		gs = gs[:0]
		return err
	}
	for o, err := range src {
		if err != nil {
			return err
		}
		if o.slot >= p.next || (have && o.slot < cur) {
			return fmt.Errorf("%w: bulk build: object for slot %d after slot %d (next %d)", ErrInvalidOptions, o.slot, cur, p.next)
		}
		if !have || o.slot != cur {
			if err := flush(); err != nil {
				return err
			}
			// Slots ascend: the previous segment's entries are done.
			if have && o.slot/slotsPerSeg != cur/slotsPerSeg {
				t.segCache[cur/slotsPerSeg] = nil
			}
			cur, have = o.slot, true
		}
		var dk, do int
		gs, dk, do = applyInsert(p.kind, gs, o.key, o.obj)
		t.h.noKeys += uint64(dk)
		t.h.noObjects += uint64(do)
	}
	return flush()
}

// InitTable replaces the whole content of the table with the objects of
// objs, in a bulk layout (OTP init_table/2): the file is rebuilt with
// slots >= keys (at least the table's minimum) and the buckets written once
// each, which is much faster than inserting one by one. Objects are applied
// in order with Insert's rules. All objects are read and encoded before the
// file is touched, so an error from objs, or a bad object, leaves the table
// unchanged; the objects' encodings are held in memory meanwhile.
//
// objs runs without the table's lock, so it may read this table:
// InitTable(t.All()) rebuilds a table from its own content. A write of
// another goroutine that lands while objs runs is replaced with the rest.
func (t *Table) InitTable(objs iter.Seq2[etf.Term, error]) error {
	// A closed or read-only table is refused before objs runs.
	if err := t.begin(true); err != nil {
		return err
	}
	t.mu.Unlock()
	type item struct {
		bulkObject
		hash uint64
	}
	var items []item
	for o, err := range objs {
		if err != nil {
			return err
		}
		// prepare without the lock: native hashes the key's bytes
		// inside the object's encoding (preparedHash), touching none of
		// t's buffers; an open table's key position and format never
		// change (build writes them only for a new table).
		ps, err := t.prepare([]etf.Term{o})
		if err != nil {
			return err
		}
		items = append(items, item{bulkObject{key: ps[0].key, obj: ps[0].obj}, ps[0].hash})
	}
	if err := t.begin(true); err != nil {
		return err
	}
	defer t.mu.Unlock()
	// Count distinct keys: sort by hash, then key.
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(items[a].hash, items[b].hash); c != 0 {
			return c
		}
		return etf.CompareExact(items[a].key, items[b].key)
	})
	nkeys := int64(0)
	for i, x := range idx {
		if i == 0 || items[idx[i-1]].hash != items[x].hash || !etf.Equal(items[idx[i-1]].key, items[x].key) {
			nkeys++
		}
	}
	next := nextForKeys(nkeys, t.h.minSlots, t.h.maxSlots)
	if t.lay.tag == tagNative {
		next = nativeNextForKeys(nkeys, t.h.minSlots, t.h.maxSlots)
	}
	m, n := hashParamsFor(next)
	for i := range items {
		items[i].slot = slotOf(items[i].hash, m, n)
	}
	// Slot order; a stable sort keeps each slot's objects in input order.
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.slot, b.slot) })
	if err := t.beginWrite(); err != nil {
		return t.fail(err)
	}
	if t.lay.tag == tagNative {
		return t.fail(t.nativeRebuild(next, func(add func(bulkObject) error) error {
			for _, it := range items {
				if err := add(it.bulkObject); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	p := bulkParams{kind: t.kind, keyPos: t.keyPos, minSlots: t.h.minSlots, maxSlots: t.h.maxSlots, next: next}
	return t.fail(t.build(p, func(yield func(bulkObject, error) bool) {
		for _, it := range items {
			if !yield(it.bulkObject, nil) {
				return
			}
		}
	}))
}

// nativeNextForKeys is nextForKeys for native: two keys a slot (the load
// rule of docs/format-native.md §5.3), in 512-slot segments.
func nativeNextForKeys(nkeys int64, minSlots, maxSlots uint64) uint64 {
	n := uint64(nkeys+1) / 2
	n = (n + nativeSlotsPerSeg - 1) / nativeSlotsPerSeg * nativeSlotsPerSeg
	return min(max(n, minSlots), maxSlots)
}

// nativeRebuild replaces a native table's content with a new tree of
// next slots holding the objects fill adds (in ascending slot order, each
// slot's in time order), and checkpoints it: InitTable and
// DeleteAllObjects (docs/format-native.md §10.2: checkpoints of a new
// tree, not log records). The new buckets, segments and parts go into
// free space only, and the old ones become pending, so until the new meta
// is written the old meta and its log still describe the old content
// intact: a kill at any point gives the old content or the new.
func (t *Table) nativeRebuild(next uint64, fill func(add func(bulkObject) error) error) error {
	nat := t.nat
	// Read every segment first: a damaged one fails here, before anything
	// changed.
	for pg := range t.h.next / slotsPerSeg {
		if _, err := t.segment(pg); err != nil {
			return err
		}
	}
	if err := t.nativeDropTree(); err != nil {
		return fmt.Errorf("%w: %w", errInconsistent, err)
	}
	m, n := hashParamsFor(next)
	t.h.next, t.h.m, t.h.n, t.h.noKeys, t.h.noObjects = next, m, n, 0, 0
	nsegs := next / nativeSlotsPerSeg
	nat.segs = make([]nativeChild, nsegs)
	nat.parts = make([]nativeChild, (nsegs+nativeSegsPerPart-1)/nativeSegsPerPart)
	t.segCache = make([]*[slotsPerSeg]slotWord, next/slotsPerSeg)
	for i := range t.segCache {
		t.segCache[i] = new([slotsPerSeg]slotWord)
	}
	clear(nat.dirty)
	for s := range nsegs {
		nat.dirty[s] = struct{}{}
	}
	nat.rebuilt = true
	t.changes++
	var gs []group
	cur, have := uint64(0), false
	flush := func() error {
		if len(gs) == 0 {
			return nil
		}
		err := t.nativeBulkBucket(cur, gs)
		gs = gs[:0]
		return err
	}
	err := fill(func(o bulkObject) error {
		if o.slot >= next || (have && o.slot < cur) {
			return fmt.Errorf("%w: bulk build: object for slot %d after slot %d (next %d)", ErrInvalidOptions, o.slot, cur, next)
		}
		if !have || o.slot != cur {
			if err := flush(); err != nil {
				return err
			}
			cur, have = o.slot, true
		}
		var dk, do int
		gs, dk, do = applyInsert(t.kind, gs, o.key, o.obj)
		t.h.noKeys += uint64(dk)
		t.h.noObjects += uint64(do)
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = t.save(true)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errInconsistent, err)
	}
	return nil
}

// nativeDropTree makes every bucket, segment and part of the current tree
// pending (the root, free record and log blocks are the checkpoint's to
// release). Every cache page must be loaded.
func (t *Table) nativeDropTree() error {
	nat := t.nat
	a := nat.alloc
	for _, pg := range t.segCache {
		for _, w := range pg {
			if w != 0 {
				if err := a.release(nativeEntry(w)); err != nil {
					return err
				}
			}
		}
	}
	for _, c := range slices.Concat(nat.segs, nat.parts) {
		if c.off != 0 { // 0: a node growth added in this epoch, never written
			if err := a.release(nativeBlockEntry(c.off, nativeMinBuddyClass)); err != nil {
				return err
			}
		}
	}
	return nil
}

// nativeBulkBucket writes the bucket of slot that holds gs into a new
// cell or block, without a log record (the checkpoint that ends the
// rebuild names it), and points the slot's cached entry at it.
func (t *Table) nativeBulkBucket(slot uint64, gs []group) error {
	t.nat.seq++ // above every bucket of the old tree (§8)
	ne, err := t.writeNativeBucket(slot, gs, t.nat.seq)
	if err != nil {
		return err
	}
	t.segCache[slot/slotsPerSeg][slot%slotsPerSeg] = slotWord(ne)
	return nil
}
