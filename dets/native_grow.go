package dets

import (
	"fmt"
	"slices"
)

// Growth of native tables (docs/format-native.md §5.3, §10.2): one step
// adds a 512-slot segment and splits slots N..N+511 into themselves and
// N+M..N+M+511, as one atomic log group. The group opens with the GROW
// record (so that the replay of §11 already knows the new slots when the
// PUTs name them) and ends with the last PUT or EMPTY of the split. Every
// non-empty slot of the old segment is rewritten, even when all its keys
// stay: its level goes up by one (§6.1), and a bucket's header says which
// keys it speaks for. Native tables never shrink, as otp9's do not.

// nativeSplit is the plan for one slot of a split: the old entry and the
// object records (bodies, without the bucket header) of the keys that
// stay and of those that move, as ranges of one shared buffer.
type nativeSplit struct {
	j                  uint64 // slot N+j
	old                slotEntry
	oldKeys, oldObjs   int
	keepLo, keepHi     int
	moveLo, moveHi     int
	keepKeys, keepObjs int
	moveKeys, moveObjs int
}

// nativeGrow runs one growth step. Reads and the partition happen under
// the old shape; a failure there leaves the table as it was. Once the
// GROW record is written, a failure leaves memory ahead of a group the
// log does not complete, so it is errInconsistent (the table fails; a
// replay drops the incomplete group).
func (t *Table) nativeGrow() error {
	nat := t.nat
	m, n := t.h.m, t.h.n
	plan, body := nat.growPlan[:0], nat.growBuf[:0]
	sc := getScratch()
	defer putScratch(sc)
	for j := range uint64(nativeSlotsPerSeg) {
		slot := n + j
		e, err := t.entry(slot)
		if err != nil {
			return err
		}
		if e.size == 0 {
			continue
		}
		gs, _, err := t.readRawInto(slot, sc)
		if err != nil {
			return err
		}
		p := nativeSplit{j: j, old: e, oldKeys: nat.readKeys, oldObjs: nat.readObj}
		p.keepLo = len(body)
		for pass := range 2 {
			for k := range gs {
				if (nativeKeyHash(gs[k].kenc)&(2*m-1) >= m) != (pass == 1) {
					continue
				}
				for _, o := range gs[k].objs {
					body = appendNativeObject(body, o.enc, o.sum)
				}
				if pass == 0 {
					p.keepKeys++
					p.keepObjs += len(gs[k].objs)
				} else {
					p.moveKeys++
					p.moveObjs += len(gs[k].objs)
				}
			}
			if pass == 0 {
				p.keepHi, p.moveLo = len(body), len(body)
			}
		}
		p.moveHi = len(body)
		plan = append(plan, p)
	}
	nat.growPlan, nat.growBuf = plan, body
	if cap(body) > maxScratch {
		nat.growBuf = nil // a step of large buckets: not kept
	}

	if err := t.logRoom(); err != nil {
		return err
	}
	newM, newN := m, n+nativeSlotsPerSeg
	if newN == m {
		newM, newN = 2*m, 0
	}
	grow := nativeLogRec{epoch: nat.meta.gen, typ: recGrow, slot: t.h.next + nativeSlotsPerSeg, entry: newM}
	if len(plan) == 0 {
		grow.flags = recEndGroup
	}
	if err := t.writeRec(&grow); err != nil {
		return err
	}
	if err := t.nativeSplitWrite(plan, body, m, newM, newN); err != nil {
		return fmt.Errorf("%w: %w", errInconsistent, err)
	}
	return nil
}

// nativeSplitWrite is the second half of nativeGrow: the new shape in
// memory, the new segment (and part) in the tree, and each planned
// slot's two buckets with their records.
func (t *Table) nativeSplitWrite(plan []nativeSplit, body []byte, m, newM, newN uint64) error {
	nat := t.nat
	n := t.h.n
	seg := t.h.next / nativeSlotsPerSeg
	t.h.m, t.h.n, t.h.next = newM, newN, t.h.next+nativeSlotsPerSeg
	if seg%nativeSegsPerPart == 0 {
		nat.parts = append(nat.parts, nativeChild{})
	}
	nat.segs = append(nat.segs, nativeChild{})
	t.segCache = append(t.segCache, new([slotsPerSeg]slotWord), new([slotsPerSeg]slotWord))
	nat.dirty[seg] = struct{}{}
	nat.dirty[n/nativeSlotsPerSeg] = struct{}{}
	for i, p := range plan {
		last := i == len(plan)-1
		keep := nativeLogRec{slot: n + p.j, dObj: int32(p.keepObjs - p.oldObjs), dKeys: int32(p.keepKeys - p.oldKeys)}
		if last && p.moveHi == p.moveLo {
			keep.flags = recEndGroup
		}
		if err := t.nativePutBody(&keep, body[p.keepLo:p.keepHi]); err != nil {
			return err
		}
		if p.moveHi > p.moveLo {
			move := nativeLogRec{slot: n + p.j + m, dObj: int32(p.moveObjs), dKeys: int32(p.moveKeys)}
			if last {
				move.flags = recEndGroup
			}
			if err := t.nativePutBody(&move, body[p.moveLo:p.moveHi]); err != nil {
				return err
			}
		}
		if err := nat.alloc.release(nativeEntry(t.wordOf(p.old))); err != nil {
			return err
		}
		nat.pendBytes += uint64(p.old.size)
	}
	return nil
}

// nativePutBody writes the bucket of r.slot whose object records are
// recs (none: the slot empties) into a new cell or block, logs it as r (a
// PUT or an EMPTY, with r's slot, counts and flags) and points the slot's
// cached entry at it. It neither reads nor frees the slot's old bucket.
func (t *Table) nativePutBody(r *nativeLogRec, recs []byte) error {
	nat := t.nat
	if err := t.logRoom(); err != nil { // a LINK takes a seq: before the bucket's
		return err
	}
	r.epoch, r.typ = nat.meta.gen, recEmpty
	var ne nativeEntry
	if len(recs) > 0 {
		size := uint64(nativeBucketHeader + len(recs))
		var err error
		if ne, err = nat.alloc.alloc(size); err != nil {
			return fmt.Errorf("%w: %s", err, t.path)
		}
		h := nativeBucketHead{seq: nat.seq + 1, slot: uint32(r.slot), level: t.nativeLevel(r.slot), size: size}
		buf := slices.Grow(t.wbuf[:0], int(size))[:nativeBucketHeader]
		h.encode(buf)
		buf = append(buf, recs...)
		t.wbuf = buf
		if err := t.nativeCover(ne.off() + ne.room()); err != nil {
			return err
		}
		if err := t.writeAt(buf, int64(ne.off())); err != nil {
			return err
		}
		r.typ, r.entry, r.bsum = recPut, uint64(ne), nativeBucketSum(nat.super.revision, buf)
	}
	if err := t.writeRec(r); err != nil {
		return err
	}
	pg, err := t.segment(r.slot / slotsPerSeg)
	if err != nil {
		return err
	}
	pg[r.slot%slotsPerSeg] = slotWord(ne)
	nat.dirty[r.slot/nativeSlotsPerSeg] = struct{}{}
	t.changes++
	return nil
}
