package dets

import "github.com/godets/godets/etf"

// Linear hashing (§3): the table grows one 256-slot segment at a time.

// maybeGrow adds segments while there are more keys than slots (OTP's goal
// slots >= keys, reached eagerly here) and the maximum allows.
func (t *Table) maybeGrow() error {
	for t.h.noKeys > t.h.next && t.h.next < t.h.maxSlots {
		if err := t.grow(); err != nil {
			return err
		}
	}
	return nil
}

// grow allocates segment Next/256 (and a new segment-array part when the
// segment starts one), then splits old slots N..N+255: a key of slot i whose
// phash2 has the M bit set moves to slot i+M. Object order within each key
// is kept.
func (t *Table) grow() error {
	seg := int(t.h.next / slotsPerSeg)
	if seg%segsPerPart == 0 {
		p := seg / segsPerPart
		a, err := t.allocZeroed(partSize)
		if err != nil {
			return err
		}
		var b [4]byte
		be.PutUint32(b[:], uint32(a))
		if err := t.writeAt(b[:], partTableOff+4*int64(p)); err != nil {
			return err
		}
		t.parts[p] = uint32(a)
	}
	a, err := t.allocZeroed(segmentSize)
	if err != nil {
		return err
	}
	var b [4]byte
	be.PutUint32(b[:], uint32(a))
	if err := t.writeAt(b[:], int64(t.parts[seg/segsPerPart])+4*int64(seg%segsPerPart)); err != nil {
		return err
	}
	t.segs = append(t.segs, uint32(a))
	t.segCache = append(t.segCache, new([slotsPerSeg]slotEntry))

	m, n := t.h.m, t.h.n
	for i := n; i < n+slotsPerSeg; i++ {
		gs, e, err := t.readGroups(i)
		if err != nil {
			return err
		}
		if len(gs) == 0 {
			continue
		}
		var keep, move []group
		for _, g := range gs {
			if hashTerm(g.key)&(2*m-1) >= m {
				move = append(move, g)
			} else {
				keep = append(keep, g)
			}
		}
		if len(move) == 0 {
			continue
		}
		if err := t.writeGroups(i+m, slotEntry{}, move); err != nil {
			return err
		}
		if err := t.writeGroups(i, e, keep); err != nil {
			return err
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

// allocZeroed allocates a 2048-byte part or segment and zero-fills it.
func (t *Table) allocZeroed(size int64) (int64, error) {
	a, err := t.bud.alloc(size)
	if err != nil {
		return 0, err
	}
	if err := t.writeAt(make([]byte, size), a); err != nil {
		return 0, err
	}
	return a, nil
}

// keyHash returns the phash2 of a key.
func keyHash(k etf.Term) uint32 { return hashTerm(k) }
