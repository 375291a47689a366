package dets

import (
	"errors"
	"fmt"

	"github.com/godets/godets/etf"
)

// Linear hashing (§3): the table grows one 256-slot segment at a time.

// maybeGrow adds segments while there are more keys than slots (OTP's goal
// slots >= keys, reached eagerly here) and the maximum allows.
func (t *Table) maybeGrow() error {
	for t.h.noKeys > t.h.next && t.h.next < t.h.maxSlots {
		if err := t.grow(); err != nil {
			if errors.Is(err, ErrFileTooLarge) && !errors.Is(err, errInconsistent) {
				return nil // no room for a segment: stay at this size
			}
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
	// Allocate first: a full file (ErrFileTooLarge) just stops the growth.
	partAddr := int64(-1)
	if seg%segsPerPart == 0 {
		a, err := t.bud.alloc(partSize)
		if err != nil {
			return err
		}
		partAddr = a
	}
	segAddr, err := t.bud.alloc(segmentSize)
	if err != nil {
		if partAddr >= 0 {
			t.bud.freeBlock(partAddr, partSize)
		}
		return err
	}
	if err := t.growAt(seg, partAddr, segAddr); err != nil {
		return fmt.Errorf("%w: %w", errInconsistent, err)
	}
	return nil
}

// errInconsistent marks an error after which the in-memory state may not
// match the file; it makes even ErrFileTooLarge sticky.
var errInconsistent = errors.New("dets: table state left inconsistent")

func (t *Table) growAt(seg int, partAddr, segAddr int64) error {
	var b [4]byte
	if partAddr >= 0 {
		p := seg / segsPerPart
		if err := t.writeAt(make([]byte, partSize), partAddr); err != nil {
			return err
		}
		be.PutUint32(b[:], uint32(partAddr))
		if err := t.writeAt(b[:], partTableOff+4*int64(p)); err != nil {
			return err
		}
		t.parts[p] = uint32(partAddr)
	}
	if err := t.writeAt(make([]byte, segmentSize), segAddr); err != nil {
		return err
	}
	be.PutUint32(b[:], uint32(segAddr))
	if err := t.writeAt(b[:], int64(t.parts[seg/segsPerPart])+4*int64(seg%segsPerPart)); err != nil {
		return err
	}
	t.segs = append(t.segs, uint32(segAddr))
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

// keyHash returns the phash2 of a key.
func keyHash(k etf.Term) uint32 { return hashTerm(k) }
